/**
 * A widget that shows a live model: it renders on every `changed` of its source
 * and lets go of the signal when disposed.
 */
import { ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

export interface ILiveSource {
  readonly changed: ISignal<any, void>;
}

export abstract class LiveWidget<T extends ILiveSource> extends Widget {
  constructor(
    protected readonly source: T,
    className: string,
    options: Widget.IOptions = {}
  ) {
    super(options);
    this.addClass(className);
    this.source.changed.connect(this.render, this);
    this.render();
  }

  dispose(): void {
    this.source.changed.disconnect(this.render, this);
    super.dispose();
  }

  /** Called with `this.source` set; subclass fields are not set yet the first time. */
  protected abstract render(): void;
}

/** A status-bar item a click (or Enter, Space) acts on. */
export function makeClickable(node: HTMLElement, onClick: () => void): void {
  node.setAttribute('role', 'button');
  node.tabIndex = 0;
  node.addEventListener('click', () => onClick());
  node.addEventListener('keydown', event => {
    if (event.key === 'Enter' || event.key === ' ') {
      onClick();
    }
  });
}

const WARN_SECONDS = 15 * 60;
const URGENT_SECONDS = 5 * 60;

/** How a countdown looks: `ok`, `warn` under 15 minutes, `urgent` under 5. */
export function urgency(secondsLeft: number | null): 'ok' | 'warn' | 'urgent' {
  if (secondsLeft === null || secondsLeft > WARN_SECONDS) {
    return 'ok';
  }
  return secondsLeft <= URGENT_SECONDS ? 'urgent' : 'warn';
}
