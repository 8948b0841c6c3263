"""Label selectors in both syntaxes."""

import pytest

from dsctl_api.labels import SelectorError, parse_selector, selector_from_label_selector

LABELS = {"app": "web", "tier": "front", "n": "5"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", True, id="empty-matches-all"),
        pytest.param("app=web", True, id="equals"),
        pytest.param("app==web", True, id="double-equals"),
        pytest.param("app!=web", False, id="not-equals"),
        pytest.param("app!=db", True, id="not-equals-other"),
        pytest.param("missing!=x", True, id="not-equals-absent-key"),
        pytest.param("app in (db, web)", True, id="in-set"),
        pytest.param("app notin (db,web)", False, id="notin-set"),
        pytest.param("tier", True, id="exists"),
        pytest.param("!tier", False, id="not-exists"),
        pytest.param("app=web,tier=back", False, id="conjunction"),
        pytest.param("n gt 4", True, id="greater-than"),
        pytest.param("n lt 4", False, id="less-than"),
        pytest.param("example.com/role=x", False, id="prefixed-key"),
    ],
)
def test_parse_selector_matches(text: str, expected: bool) -> None:
    """String selectors match labels the way kube-apiserver filters lists."""
    assert parse_selector(text).matches(LABELS) is expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("app in web", id="in-without-parens"),
        pytest.param("app=web tier", id="missing-comma"),
        pytest.param("-bad=x", id="bad-key"),
        pytest.param("app in (a", id="unterminated"),
    ],
)
def test_parse_selector_rejects(text: str) -> None:
    """Malformed selector strings raise SelectorError rather than matching wrongly."""
    with pytest.raises(SelectorError):
        parse_selector(text)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(None, False, id="nil-selects-nothing"),
        pytest.param({}, True, id="empty-selects-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, True, id="match-labels"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]},
                     False, id="expression-in"),
        pytest.param({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]},
                     True, id="does-not-exist"),
        pytest.param({"matchLabels": {"app": "web"},
                      "matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True, id="both"),
    ],
)
def test_label_selector_object(selector: dict[str, object] | None, expected: bool) -> None:
    """metav1.LabelSelector objects compile to the same matching rule."""
    assert selector_from_label_selector(selector).matches(LABELS) is expected


def test_label_selector_object_rejects_unknown_operator() -> None:
    """An unknown operator is an error that names the operator."""
    with pytest.raises(SelectorError, match="Near"):
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})


def test_selector_round_trips_to_string() -> None:
    """str(selector) re-parses to an equal selector."""
    selector = parse_selector("app=web,tier!=back,zone in (a,b),!gone,has")
    assert parse_selector(str(selector)) == selector
