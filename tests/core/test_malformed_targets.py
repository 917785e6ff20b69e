"""Issue 31, class 10 (c): a malformed import path of trusted code (``mypkg.search..R``, a
trailing or leading dot, a name that is no Python name) is refused by its text, before the
package is imported: its import-time code never runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

from harness.core.errors import ConfigError
from harness.core.resolve import path_fault
from harness.core.trust import check_trusted, trusted, trusting


@pytest.mark.parametrize(("path", "fault"), [
    ("mypkg.search..R", "it has an empty name between two dots"),
    ("mypkg.search.R.", "it ends with a dot"),
    (".mypkg.search.R", "it starts with a dot"),
    ("my-pkg.search.R", "'my-pkg' is not a Python name"),
    ("mypkg.class.R", "'class' is a Python keyword, not a module or attribute name"),
    ("mypkg.search.R ", "it has spaces around it"),
    ("mypkg.search.R", None),
    ("mypkg.suche_ü.R", None),  # Python names may be non-ASCII
])
def test_an_import_path_is_judged_by_its_text(path: str, fault: str | None) -> None:
    assert path_fault(path) == fault


def test_the_trust_checks_refuse_it_before_the_trust_list() -> None:
    with trusting(("mypkg.*",)):
        with pytest.raises(ConfigError, match=r"retriever._target_: 'mypkg.search..R' is not "
                                              r"an import path \(it has an empty name"):
            trusted("retriever", "mypkg.search..R")
        with pytest.raises(ConfigError, match=r"retriever.factory: 'mypkg.make.' is not an "
                                              r"import path \(it ends with a dot\)"):
            check_trusted("retriever.factory", "mypkg.make.")
        assert trusted("retriever", "mypkg.search.R") == "mypkg.search.R"


INIT = """
from pathlib import Path
Path(__file__).with_name("IMPORTED").write_text("the package was imported")
"""


@pytest.mark.parametrize("args", [
    ("retriever=custom", "retriever._target_={pkg}.search..Keyed"),
    ("retriever=custom", "retriever._target_={pkg}.search.Keyed."),
    ("retriever=custom", "retriever._target_={pkg}.search.2Keyed"),
    ("retriever=langchain", "retriever.factory={pkg}..make"),
])
def test_the_command_refuses_it_without_importing_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]) -> None:
    pkg = tmp_path / "initpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(INIT)
    (pkg / "search.py").write_text("class Keyed:\n    pass\n\ndef make():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run_cli(*(a.format(pkg="initpkg") for a in args), "trusted_targets=[initpkg.*]",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: retriever.") and "is not an import path" in line, line
    assert "nothing was imported" in line
    assert not (pkg / "IMPORTED").exists()  # its import-time code never ran
