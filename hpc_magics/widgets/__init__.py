"""ipywidgets views, fed with immutable snapshots; pure view models beside them."""
