"""Mapping of API server answers to the dsctl.kube error hierarchy."""

from __future__ import annotations

import orjson
import pytest

from dsctl.kube import errors
from dsctl.kube.errors import ApiError, from_status, from_status_object


def _status(code: int, reason: str, message: str = "m", **extra: object) -> bytes:
    return orjson.dumps(
        {"kind": "Status", "apiVersion": "v1", "code": code, "reason": reason, "message": message}
        | extra
    )


@pytest.mark.parametrize(
    ("http", "body", "cls", "reason"),
    [
        pytest.param(404, _status(404, "NotFound"), errors.NotFound, "NotFound", id="404"),
        pytest.param(409, _status(409, "Conflict"), errors.Conflict, "Conflict", id="409-conflict"),
        pytest.param(
            409, _status(409, "AlreadyExists"), errors.AlreadyExists, "AlreadyExists",
            id="409-already-exists",
        ),
        pytest.param(410, _status(410, "Expired"), errors.Gone, "Expired", id="410-expired"),
        pytest.param(422, _status(422, "Invalid"), errors.Invalid, "Invalid", id="422"),
        pytest.param(
            429, _status(429, "TooManyRequests"), errors.TooManyRequests, "TooManyRequests",
            id="429",
        ),
        pytest.param(401, _status(401, "Unauthorized"), errors.Unauthorized, "Unauthorized",
                     id="401"),
        pytest.param(403, _status(403, "Forbidden"), errors.Forbidden, "Forbidden", id="403"),
        pytest.param(400, _status(400, "BadRequest"), errors.BadRequest, "BadRequest", id="400"),
        pytest.param(500, _status(500, "InternalError"), errors.ServerError, "InternalError",
                     id="500"),
        pytest.param(503, b"", errors.ServerError, "ServiceUnavailable", id="503-empty"),
        pytest.param(502, b"<html>bad gateway</html>", errors.ServerError, "InternalError",
                     id="502-html"),
        pytest.param(418, b"", ApiError, "Unknown", id="418-generic"),
    ],
)
def test_from_status_maps_code_to_class(
    http: int, body: bytes, cls: type[ApiError], reason: str
) -> None:
    """Each HTTP status (and Status reason) maps to exactly one error class."""
    err = from_status(http, body)
    assert type(err) is cls
    assert err.status == http
    assert err.reason == reason


def test_plain_text_body_becomes_message() -> None:
    """A non-Status body contributes its first line as the message."""
    err = from_status(500, b"internal error\nmore detail\n")
    assert isinstance(err, errors.ServerError)
    assert err.message == "internal error"


def test_in_stream_status_uses_its_code() -> None:
    """An ERROR event inside a 200 stream is classified by the Status code it carries."""
    err = from_status_object(200, {"kind": "Status", "code": 410, "reason": "Expired",
                                   "message": "too old resource version: 1 (5)"})
    assert isinstance(err, errors.Gone)
    assert err.status == 410
    assert "too old" in str(err)


def test_invalid_exposes_causes() -> None:
    """422 keeps the field causes from Status details."""
    causes = [{"field": "spec.selector", "reason": "FieldValueInvalid", "message": "bad"}]
    err = from_status(422, _status(422, "Invalid", details={"causes": causes}))
    assert err.causes == causes


def test_retry_after_is_kept() -> None:
    """The Retry-After passed in is available on the error."""
    err = from_status(429, _status(429, "TooManyRequests"), retry_after=3.0)
    assert isinstance(err, errors.TooManyRequests)
    assert err.retry_after == 3.0


def test_connection_failed_is_an_api_error_with_status_zero() -> None:
    """``except ApiError`` also catches connection failures; their status is 0."""
    err = errors.ConnectionFailed("cannot connect to http://x: refused")
    assert isinstance(err, ApiError)
    assert err.status == 0
    assert str(err) == "ConnectionFailed: cannot connect to http://x: refused"


def test_config_error_is_not_an_api_error() -> None:
    """Configuration failures are a separate branch of the hierarchy."""
    assert not issubclass(errors.ConfigError, ApiError)
    assert issubclass(errors.ConfigError, errors.KubeError)
