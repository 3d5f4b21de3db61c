"""The one-line titles of graph breaks: the reason itself, not torch's lead-in to it.

The texts are torch 2.13's graph-break log records (``torch._logging`` artifact
``graph_breaks``) of a model that prints and branches on a tensor, cut after the hints.
"""

from __future__ import annotations

from warmscope.core.child.hooks import _log_title, _source_name, _with_dynamic

CALL = """Graph break in user code at /tmp/gb/model.py:5
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Failed to trace builtin operator
  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str'] (has_kwargs False)
  Hint: Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative function/method to `print`.
  Hint: Please report an issue to PyTorch.

  Developer debug context: builtin print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False
"""

BRANCH = """Graph break in user code at /tmp/gb/model.py:6
Graph Break Reason: Data-dependent branching
  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not support tracing dynamic control flow.
  Hint: Use `torch.cond` to express dynamic control flow.
"""


def test_a_lead_in_reason_is_followed_by_the_break_and_its_explanation() -> None:
    title = _log_title("graph_break", CALL)
    assert not title.endswith(":")
    assert title.startswith("graph break: Failed to trace builtin operator: Dynamo does not know")
    assert "`print`" in title and title.endswith("(model.py:5)")


def test_a_plain_reason_stays_and_gets_its_place() -> None:
    assert _log_title("graph_break", BRANCH) == "graph break: Data-dependent branching (model.py:6)"


def test_a_lead_in_alone_still_says_what_follows_it() -> None:
    text = "Graph Break Reason: Graph break encountered:\n  Explanation: cannot trace `foo`\n"
    assert _log_title("graph_break", text) == "graph break: cannot trace `foo`"
    assert _log_title("graph_break", "Graph Break Reason: Graph break encountered:") == (
        "graph break: Graph break encountered"
    )


# torch 2.13's recompile log record (``torch._logging`` artifact ``recompiles``) of a
# transformers model called with longer input_ids.
RECOMPILE = """Recompiling function wrapper in /venv/lib/python3.11/site-packages/transformers/utils/generic.py:969
    triggered by the following guard failure(s):
    - 0/0: tensor 'kwargs['input_ids']' size mismatch at index 1. expected 24, actual 48
"""

TWO_FAILURES = """Recompiling function forward in /tmp/m.py:5
    triggered by the following guard failure(s):
    - 0/1: tensor 'x' size mismatch at index 0. expected 4, actual 8
    - 0/0: tensor 'x' size mismatch at index 0. expected 2, actual 8
"""


def test_a_recompile_title_leads_with_the_guard_failure_and_ends_with_the_place() -> None:
    title = _log_title("recompile", RECOMPILE)
    # The reason first, in the words an 80-column row keeps; the place last.
    assert title == "size mismatch input_ids[1]: 24 → 48 (wrapper, generic.py:969)"


def test_further_guard_failures_are_counted_not_listed() -> None:
    assert _log_title("recompile", TWO_FAILURES) == (
        "size mismatch x[0]: 4 → 8 (+1 more) (forward, m.py:5)"
    )


def test_a_dimension_made_dynamic_is_said_before_the_place() -> None:
    title = _log_title("recompile", RECOMPILE)
    made = _with_dynamic(title, [(_source_name("L['kwargs']['input_ids']"), 1)])
    assert (
        made == "size mismatch input_ids[1]: 24 → 48 — dim 1 now dynamic (wrapper, generic.py:969)"
    )
    other = _with_dynamic(title, [("attention_mask", 1), ("attention_mask", 2)])
    assert "— attention_mask dim 1, attention_mask dim 2 now dynamic (wrapper" in other
    assert _with_dynamic(title, []) == title


def test_a_guard_failure_of_another_form_is_shortened_or_kept_as_torch_wrote_it() -> None:
    dtype = "Recompiling function f in /m.py:1\n- 0/0: tensor 'x' dtype mismatch. expected Float, actual Int"
    assert _log_title("recompile", dtype) == "dtype mismatch x: Float → Int (f, m.py:1)"
    other = "Recompiling function f in /m.py:1\n- 0/0: ___check_obj_id(L['self'], 1234)"
    assert _log_title("recompile", other) == "___check_obj_id(L['self'], 1234) (f, m.py:1)"
