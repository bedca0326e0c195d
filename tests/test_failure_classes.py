"""The one list of failure classes (earnest.gsm.failure_classes) and who uses it."""

import pytest

from earnest.gsm import failure_classes as fc
from earnest.gsm.extraction import TEXT_ERROR_CLASSES
from earnest.sandbox import ERROR_CLASSES, REFERENCE_ERROR_CLASSES


def test_reference_mode_has_exactly_the_reference_error_types():
    # the authors' ErrorType members (answer_extractor.py at d063998)
    reference = {"NO_NUMBER", "NO_FUNCTION", "SYNTAX_ERROR", "NAME_ERROR", "FORBIDDEN_STRING",
                 "NONE_RETURNED", "NOT_A_NUMBER", "TYPE_VALUE_ERROR", "ZERO_DIVISION_ERROR",
                 "ATTRIBUTE_ERROR", "UNCLASSIFIED", "EMPTY_RESPONSE", "EMPTY_AFTER_TRIM"}
    assert set(fc.FROM_REFERENCE) == reference
    produced = set(fc.classes("text", "reference", scoring=False)) | set(fc.classes("code", "reference", scoring=False))
    # and two labelled outcomes of earnest's (issue 54): an answer the authors' code crashes on, and a
    # response that is not text
    assert produced == set(fc.FROM_REFERENCE.values()) | {fc.CRASHES_REFERENCE, fc.UNREADABLE}


def test_earnest_mode_adds_its_own_classes_only():
    code = fc.classes("code", "earnest", scoring=False)
    assert "forbidden_construct" in code and "timeout" in code and "resource_limit" in code
    assert "forbidden_string" not in code
    # the sandbox's own names are the taxonomy's, in its order ("unreadable" is decided before any
    # code runs, by the reader of the answers)
    assert ERROR_CLASSES == tuple(c for c in code if c != fc.UNREADABLE)
    assert REFERENCE_ERROR_CLASSES == tuple(c for c in fc.classes("code", "reference", scoring=False)
                                            if c != fc.UNREADABLE)
    assert set(TEXT_ERROR_CLASSES) == set(fc.classes("text", "earnest", scoring=False))


def test_labels_follow_appendix_f():
    assert fc.label("forbidden_string") == "Forbidden string"
    assert fc.label("type_value_error") == "Type/Value error"
    assert fc.label("wrong_answer_last_number") == "Wrong answer — last number"
    assert fc.label("no_such_class") == "no_such_class"
    # every class an answer of reference mode can end in is the paper's, but three that are no outcome
    # the paper counts: an answer the machine failed to run (in no count), one that crashes the
    # authors' run, and an unreadable line
    assert all(c.paper for c in fc.FAILURE_CLASSES.values()
               if "reference" in c.modes and c.name not in (fc.INFRASTRUCTURE_ERROR, fc.CRASHES_REFERENCE, fc.UNREADABLE))


def test_check_names_the_place_of_an_unknown_class():
    assert fc.check("") == ""
    assert fc.check("syntax_error") == "syntax_error"
    with pytest.raises(ValueError, match="scored.csv row 3"):
        fc.check("sintax_error", "scored.csv row 3")
    with pytest.raises(ValueError):
        fc.classes("code", "faithful")


def test_sandbox_worker_writes_only_known_class_names():
    # the worker side of earnest.sandbox runs alone (standard library only) and so writes the class
    # names as strings; every one of them, in every module of the package, must be a class of
    # earnest.gsm.failure_classes
    import ast
    from pathlib import Path

    import earnest.sandbox as sandbox

    modules = sorted(Path(sandbox.__file__).parent.rglob("*.py"))
    assert {"worker.py", "protocol.py"} <= {p.name for p in modules}
    nodes = [node for path in modules for node in ast.walk(ast.parse(path.read_text(), str(path)))]
    names = set()
    for node in nodes:
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "error":
                    names |= {n.value for n in ast.walk(value) if isinstance(n, ast.Constant)
                              and isinstance(n.value, str)}
        if isinstance(node, ast.FunctionDef) and node.name == "_classify":
            for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return)):
                names |= {n.value for n in ast.walk(ret.value) if isinstance(n, ast.Constant)
                          and isinstance(n.value, str)}
            loops = [n for n in ast.walk(node) if isinstance(n, ast.For)]
            names |= {n.value for loop in loops for n in ast.walk(loop.iter)
                      if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert {"timeout", "not_a_number", "name_error", "forbidden_construct"} <= names
    assert names <= set(fc.FAILURE_CLASSES) | {fc.CORRECT}
