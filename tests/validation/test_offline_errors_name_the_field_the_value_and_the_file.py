"""The offline commands' errors name the field, the value and the file: a bad ``maxReplicas``
shows its value where Kubernetes shows one, a v1alpha1 subset's node term is named as written,
unreadable files name themselves (never ``"<unicode string>"`` or a raw ``[Errno 2]``), and with
``-o json`` an input error is a JSON answer too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from spreadbus.cli import main

SPREAD = """\
apiVersion: apps.kruise.io/{version}
kind: WorkloadSpread
metadata: {{name: ws, namespace: default}}
spec:
  targetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  subsets:
  - name: a
    {term}:
      matchExpressions: [{{key: zone, operator: {operator}, values: [a]}}]
    maxReplicas: {maximum}
  - name: b
"""


def spread(*, version: str = "v1alpha1", operator: str = "In", maximum: str = "3") -> str:
    term = "requiredNodeSelectorTerm" if version == "v1alpha1" else "requiredNodeSelector"
    return SPREAD.format(version=version, term=term, operator=operator, maximum=maximum)


def written(tmp_path: Path, text: str, name: str = "in.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("maximum", "shown", "value"), [
    ("-1", "-1", -1),
    ("abc", '"abc"', "abc"),
    ("'0.2%'", '"0.2%"', "0.2%"),
])
def test_a_bad_max_replicas_shows_its_value_beside_kruises_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], maximum: str, shown: str, value: Any
) -> None:
    path = written(tmp_path, spread(maximum=maximum))
    assert main(["validate", "-f", path]) == 1
    assert capsys.readouterr().out == (
        "denied:\n"
        f"  spec.subsets[0].maxReplicas: Invalid value: {shown}: maxReplicas is not valid for "
        "subset\n")
    assert main(["validate", "-f", path, "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == [
        {"field": "spec.subsets[0].maxReplicas", "type": "Invalid",
         "message": "maxReplicas is not valid for subset", "value": value}]


@pytest.mark.parametrize(("version", "term"), [
    ("v1alpha1", "requiredNodeSelectorTerm"),
    ("v1beta1", "requiredNodeSelector"),
])
def test_a_node_term_error_names_the_field_as_the_object_spells_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, term: str
) -> None:
    path = written(tmp_path, spread(version=version, operator="Exists"))
    assert main(["validate", "-f", path, "-o", "json"]) == 1
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["field"] == f"spec.subsets[0].{term}.matchExpressions[0].values"


def test_a_yaml_error_names_the_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, "kind: WorkloadSpread\nspec: [unclosed")
    assert main(["validate", "-f", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: {path}: not valid YAML or JSON: line 2, column 16: expected ',' or ']', but got "
        "'<stream end>' (while parsing a flow sequence at line 2, column 7)\n"
        "    spec: [unclosed\n"
        "                   ^\n")
    assert "<unicode string>" not in captured.err
    ending = written(tmp_path, "spec: [unclosed\n", "ending.yaml")
    assert main(["validate", "-f", ending]) == 2
    assert capsys.readouterr().err == (
        f"error: {ending}: not valid YAML or JSON: line 2, column 1: expected ',' or ']', but got "
        "'<stream end>' (while parsing a flow sequence at line 1, column 7)\n")


@pytest.mark.parametrize(("argv", "option"), [
    (["validate", "-f", "{missing}"], "-f"),
    (["validate", "-f", "{spread}", "--old", "{missing}"], "--old"),
    (["plan", "-f", "{missing}"], "-f"),
    (["admit", "-f", "{spread}", "--pod", "{missing}"], "--pod"),
])
def test_a_missing_file_is_named_with_the_option_that_named_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    missing = str(tmp_path / "nowhere.yaml")
    files = {"missing": missing, "spread": written(tmp_path, spread())}
    assert main([a.format(**files) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {missing}: No such file or directory ({option})\n"
    assert "Errno" not in err


@pytest.mark.parametrize("command", ["validate", "plan", "admit"])
def test_with_json_output_an_input_error_is_a_json_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = written(tmp_path, "a: [unclosed")
    argv = [command, "-f", path, "-o", "json"]
    if command == "admit":
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"}}
        argv += ["--pod", written(tmp_path, yaml.safe_dump(pod), "pod.yaml")]
    assert main(argv) == 2
    captured = capsys.readouterr()
    answer = json.loads(captured.out)
    assert answer["file"] == path
    assert answer["error"].startswith("not valid YAML or JSON: line 1, column 13: ")
    assert captured.err.startswith(f"error: {path}: not valid YAML or JSON")


def test_an_error_about_no_file_is_a_json_answer_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = written(tmp_path, spread())
    assert main(["plan", "-f", path, "--now", "yesterday", "-o", "json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "error": "--now: not an RFC 3339 time: 'yesterday'", "file": None}
