"""The sites' current and retired systems as profiles: every one loads with its source and
date; each site refuses its placeholder accounts in one line and never a real account of
any site; a retired cluster says so and names its successor; scripts and hosts of today's
systems are matched to their own profile."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpc_magics.cli import main
from hpc_magics.core.checkscript import ScriptReport, check_script, render
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import (
    PACKAGED_DIR,
    ClusterProfile,
    Partition,
    available_profiles,
    load_profile,
    profile_from_mapping,
    toml_keys,
)
from hpc_magics.core.sites import default_profile_name, detected_profile, profile_for_host
from hpc_magics.core.sites import profile_for_script as guess_profile

ALL = sorted(p.stem for p in PACKAGED_DIR.glob("*.toml"))
SITES = {
    "alliance": ["alliance", "fir", "nibi", "narval", "rorqual", "trillium"],
    "cscs": ["cscs", "daint", "clariden", "santis", "eiger", "bristen"],
    "c3se": ["alvis"],
    "massive": ["m3"],
    "lncc": ["sdumont", "sdumont2nd"],
}
RETIRED = {"cedar": "fir", "graham": "nibi", "beluga": "rorqual", "niagara": "trillium",
           "daint_xc": "daint"}
# Accounts as the sites' own documentation and real job scripts spell them.
REAL_ACCOUNTS = {
    "alliance": ["def-smith", "rrg-jones-ab", "rrg-bengioy-ad", "def-jdoe", "ctb-lab",
                 "rpp-astro", "def-someone"],
    "cscs": ["g123", "g152", "s1160", "em09", "a-infra01-1", "csstaff", "vasp6"],
    "c3se": ["NAISS2024-5-1", "NAISS2024-22-219"],
    "massive": ["ml20", "bw83", "vf68"],
    "lncc": ["cptec", "ideeps", "cadase"],
}
# Placeholders printed in guides and left in pasted scripts.
PLACEHOLDERS = {
    "alliance": ["COMPUTE_CANADA_ACCOUNT", "def-someuser", "def-yourpi", "def-some_user",
                 "rrg-yourpi-ab", "def-$USER", "<project>", "def-<PI>", "def-xxx",
                 "YOUR_ACCOUNT", "compute-canada"],
    "cscs": ["<project>", "my_account", "PROJECT", "project_id", "gXXX", "${ACCOUNT}"],
    "c3se": ["NAISSYYYY-N-NNN", "NAISSXXXX-YY-ZZZZ", "<ACCOUNT>", "SNICYYYY-X-XXX"],
    "massive": ["projectid", "<project>", "MY_PROJECT"],
    "lncc": ["seu_projeto", "<projeto>", "PROJECT"],
}


def check(script_lines: list[str], profile: str) -> ScriptReport:
    return check_script("#!/bin/bash\n" + "\n".join(script_lines) + "\nhostname\n",
                        load_profile(profile))


@pytest.mark.parametrize("name", ALL)
def test_every_profile_loads_with_its_source_and_date(name: str) -> None:
    profile = load_profile(name)
    assert profile.description and profile.documentation
    assert re.fullmatch(r"20\d\d-\d\d-\d\d", profile.documented_on), profile.documented_on
    if profile.retired:
        assert profile.successor in available_profiles(), name
        assert not load_profile(profile.successor).retired, "a successor that is itself gone"
        assert profile.successor.lower() in profile.retired.lower()
    for pattern in (*profile.script_hints, *profile.hostnames,
                    *profile.account_placeholder_patterns):
        re.compile(pattern)


def test_every_site_has_its_current_systems() -> None:
    current = {name for name in ALL if not load_profile(name).retired}
    assert {n for names in SITES.values() for n in names} <= current
    assert set(RETIRED) == set(ALL) - current
    for name, successor in RETIRED.items():
        assert load_profile(name).successor == successor


@pytest.mark.parametrize(("site", "profile"),
                         [(s, p) for s, names in SITES.items() for p in names])
def test_a_placeholder_account_is_refused_in_one_line(site: str, profile: str) -> None:
    for account in PLACEHOLDERS[site]:
        report = check([f"#SBATCH --account={account}", "#SBATCH --time=10"], profile)
        refused = [f for f in report.errors if f.field == "account"]
        assert refused, f"{profile}: {account} passed\n" + render(report, profile)
        message = refused[0].message
        assert "\n" not in message and account in message and "use your own" in message


@pytest.mark.parametrize("profile", ALL)
def test_no_real_account_of_any_site_is_refused(profile: str) -> None:
    """Never refuse what a cluster would accept: at most a warning that it looks foreign."""
    for accounts in REAL_ACCOUNTS.values():
        for account in accounts:
            report = check([f"#SBATCH --account={account}", "#SBATCH --time=10"], profile)
            assert "account" not in {f.field for f in report.errors}, render(report, profile)


@pytest.mark.parametrize(("site", "profile"),
                         [(s, p) for s, names in SITES.items() for p in names])
def test_a_sites_own_accounts_pass_without_a_word(site: str, profile: str) -> None:
    for account in REAL_ACCOUNTS[site]:
        if site == "lncc":
            continue  # SDumont names no account pattern: any group is the user's own
        report = check([f"#SBATCH --account={account}", "#SBATCH --time=10"], profile)
        assert "account" not in {f.field for f in report.findings}, render(report, profile)


@pytest.mark.parametrize(("name", "successor"), sorted(RETIRED.items()))
def test_a_retired_cluster_says_so_in_one_line(name: str, successor: str) -> None:
    profile = load_profile(name)
    report = check([f"#SBATCH --account={profile.account_example or 'def-smith'}",
                    "#SBATCH --time=10"], name)
    said = [f for f in report.findings if f.field == "profile"]
    assert len(said) == 1 and said[0].severity == "warning"
    assert "retired" in said[0].message and "\n" not in said[0].message
    assert successor in said[0].message


@pytest.mark.parametrize(("script", "cluster"), [
    ("#SBATCH --partition=lncc-h100\n#SBATCH --time=12:00:00\n", "sdumont2nd"),
    ("#SBATCH --partition=lncc-cpu_amd --cpus-per-task=48\n", "sdumont2nd"),
    ("#SBATCH -p lncc-gh200_shared --gres=gpu:1\n", "sdumont2nd"),
    ("# ssh user@fir.alliancecan.ca\n#SBATCH --account=def-smith --gpus=h100:1\n", "fir"),
    ("#SBATCH --account=rrg-jones-ab\n# runs on Nibi\n", "nibi"),
    ("#SBATCH --account=def-smith\ncd /home/me  # rorqual\n", "rorqual"),
    ("#SBATCH --nodes=2 --account=def-smith\n# Trillium quickstart\n", "trillium"),
    ("#SBATCH --account=def-smith --gres=gpu:v100l:1\n", "cedar"),
    ("#SBATCH --account=g123\n#SBATCH --uenv=pytorch/v2.6.0:v1@clariden\n", "clariden"),
    ("#SBATCH --account=csstaff\nuenv start icon/25.1\n# santis\n", "santis"),
    ("#SBATCH --account=s1160 -p prepost\n# eiger.alps\n", "eiger"),
])
def test_todays_scripts_are_matched_to_their_own_profile(script: str, cluster: str) -> None:
    assert guess_profile(script) == cluster


def test_sdumont_2nd_partitions_are_known_and_checked() -> None:
    shared = check(["#SBATCH --partition=lncc-h100_shared", "#SBATCH --gres=gpu:1",
                    "#SBATCH --time=24:00:00"], "sdumont2nd")
    assert shared.ok and "partition" not in {f.field for f in shared.findings}
    too_many = check(["#SBATCH --partition=lncc-mi300a", "#SBATCH --gres=gpu:4",
                      "#SBATCH --time=1:00:00"], "sdumont2nd")
    assert "gres" in {f.field for f in too_many.errors}
    dev = check(["#SBATCH --partition=lncc-h100_dev", "#SBATCH --time=30:00"], "sdumont2nd")
    assert "time" in {f.field for f in dev.errors}
    # queues are granted per project: one not listed is a warning, not a refusal
    other = check(["#SBATCH --partition=ufrj-h100", "#SBATCH --time=1:00:00"], "sdumont2nd")
    assert other.ok and "partition" in {f.field for f in other.findings}


def test_a_fir_script_is_judged_by_firs_limits_not_narvals() -> None:
    h100 = ["#SBATCH --account=def-smith", "#SBATCH --gpus-per-node=h100:4",
            "#SBATCH --time=2-00:00:00"]
    assert check(h100, "fir").ok
    assert "gpus-per-node" in {f.field for f in check(h100, "narval").errors}
    week = ["#SBATCH --account=def-smith", "#SBATCH --time=3-00:00:00"]
    assert check(week, "fir").ok
    assert "time" in {f.field for f in check(week, "trillium").errors}  # 24 h there


@pytest.mark.parametrize(("host", "profile"), [
    ("narval2.narval.calcul.quebec", "narval"),
    ("fir.alliancecan.ca", "fir"),
    ("fc10512", "fir"),
    ("rorqual1", "rorqual"),
    ("tri-login01", "trillium"),
    ("daint-ln002", "daint"),
    ("clariden-ln001", "clariden"),
    ("santis-ln003", "santis"),
    ("eiger-ln004", "eiger"),
    ("sdumont2nd5", "sdumont2nd"),
    ("sdumont15", "sdumont"),
    ("alvis2", "alvis"),
    ("cedar5.cedar.computecanada.ca", "cedar"),
    ("vm", None),
    ("c1", None),
    ("", None),
])
def test_a_host_is_matched_to_its_profile(host: str, profile: str | None) -> None:
    assert profile_for_host(host) == profile


def test_the_default_profile_follows_the_login_node() -> None:
    assert default_profile_name({"HOSTNAME": "rorqual3"}) == "rorqual"
    assert default_profile_name({"HOSTNAME": "rorqual3", "HPC_MAGICS_PROFILE": "lab"}) == "lab"
    assert default_profile_name({"HOSTNAME": "vm"}) == "generic"


def test_the_detected_profile_says_why() -> None:  # hpc-magics doctor's profile line
    assert detected_profile({"HOSTNAME": "rorqual3"}) == (
        "rorqual", "this host's name rorqual3 matches its hostnames")
    assert detected_profile({"SLURM_CLUSTER_NAME": "alvis", "HOSTNAME": "vm"}) == (
        "alvis", "SLURM_CLUSTER_NAME=alvis is among its cluster_names")
    assert detected_profile({"HOSTNAME": "vm", "HPC_MAGICS_PROFILE": "lab"}) == (
        "lab", "HPC_MAGICS_PROFILE=lab")
    assert detected_profile({"HOSTNAME": "vm", "SLURM_CLUSTER_NAME": "x"}) == (
        "generic", "no profile names host vm or cluster x")


def test_a_script_for_a_retired_cluster_is_checked_against_its_successor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HPC_MAGICS_PROFILE", raising=False)
    monkeypatch.delenv("SLURM_CLUSTER_NAME", raising=False)
    monkeypatch.setenv("HOSTNAME", "vm")
    script = tmp_path / "cedar.sh"
    script.write_text("#!/bin/bash\n#SBATCH --account=def-smith --time=1:00:00\n"
                      "#SBATCH --gres=gpu:v100l:1\nhostname\n")
    assert main(["check", "--no-live", str(script)]) == 1  # Fir has no v100l
    out = capsys.readouterr().out
    assert "written for cedar (retired): checked against its successor fir" in out
    assert "GPU type 'v100l' does not exist" in out


def test_a_profile_extends_its_sites_profile(tmp_path: Path) -> None:
    (tmp_path / "site.toml").write_text('account_pattern = "p[0-9]+"\naccount_example = "p1"\n'
                                        'script_hints = ["site-wide"]\n')
    (tmp_path / "one.toml").write_text('extends = "site"\ndescription = "one cluster"\n'
                                       'cluster_names = ["one"]\n')
    one = load_profile("one", [tmp_path])
    assert one.account_pattern == "p[0-9]+" and one.account_example == "p1"
    assert one.script_hints == ()  # what names the site is not the cluster's
    (tmp_path / "two.toml").write_text('extends = "nowhere"\n')
    with pytest.raises(InvalidRequest, match=r"extends = 'nowhere' is not a profile"):
        load_profile("two", [tmp_path])
    (tmp_path / "site.toml").write_text('extends = "one"\n')
    with pytest.raises(InvalidRequest, match="makes a loop"):
        load_profile("one", [tmp_path])


def test_the_docs_list_every_profile_with_its_source_and_date() -> None:
    from hpc_magics.checker.profiles_command import markdown_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "profiles.md").read_text()
    table = markdown_table()
    assert table in page, "docs/profiles.md is stale: append `hpc-magics profiles --markdown`"
    for name in ALL:
        assert f"| `{name}` |" in table and load_profile(name).documented_on in table


def test_another_systems_partition_names_that_system() -> None:
    """SDumont 2nd's queues under the first SDumont's profile: refused, naming the profile
    that has them, in one line."""
    report = check(["#SBATCH --partition=lncc-h100", "#SBATCH --time=1:00:00"], "sdumont")
    refused = [f for f in report.errors if f.field == "partition"]
    assert refused and "\n" not in refused[0].message
    assert "--profile sdumont2nd" in refused[0].message
    # a name many systems use suggests none of them
    common = check(["#SBATCH --partition=normal", "#SBATCH --time=1:00:00"], "sdumont")
    assert "--profile" not in common.errors[0].message


@pytest.mark.parametrize("profile", ["fir", "nibi", "rorqual"])
def test_mig_slices_in_every_spelling_the_alliance_takes(profile: str) -> None:
    """Real Fir/Nibi/Rorqual scripts ask for H100 slices both ways; neither is refused, and
    a type no node has still is."""
    for line in ("#SBATCH --gpus=nvidia_h100_80gb_hbm3_2g.20gb:1",
                 "#SBATCH --gpus-per-node=h100_3g.40gb:1", "#SBATCH --gpus-per-node=h100:1"):
        report = check(["#SBATCH --account=def-smith", "#SBATCH --time=1:00:00", line],
                       profile)
        assert report.ok, render(report, profile)
    wrong = check(["#SBATCH --account=def-smith", "#SBATCH --gpus-per-node=a100:1"], profile)
    assert "gpus-per-node" in {f.field for f in wrong.errors}


def test_a_misspelt_profile_key_is_refused_naming_the_one_meant() -> None:
    with pytest.raises(InvalidRequest, match="default_partiton is not a profile key: "
                                             "did you mean default_partition"):
        profile_from_mapping("mine", {"default_partiton": "cpu"})
    with pytest.raises(InvalidRequest, match=r"partitions\.cpu\.max_tim is not a profile key"):
        profile_from_mapping("mine", {"partitions": {"cpu": {"max_tim": "1:00:00"}}})
    with pytest.raises(InvalidRequest, match="defaults is not a profile key"):  # never applied
        profile_from_mapping("mine", {"defaults": {"time": "1:00:00"}})


def test_the_admin_guide_lists_every_profile_key() -> None:
    page = (Path(__file__).parents[2] / "docs" / "admin" / "site-profile.md").read_text()
    listed = {row.split("|")[1].strip(): set(re.findall(r"`(\w+)`", row.split("|")[2]))
              for row in page.splitlines() if row.startswith(("| top", "| `[partitions"))}
    assert listed == {"top": toml_keys(ClusterProfile),
                      "`[partitions.NAME]`": toml_keys(Partition)}


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    """``hpc-magics profiles | head -1``: the reader went, so the command stops, with no
    BrokenPipeError traceback (and exit status 1, as the Python documentation's recipe)."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        done = subprocess.run([sys.executable, "-m", "hpc_magics.cli", "profiles"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60, check=False)
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode == 1
