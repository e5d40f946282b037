"""Errors told by id: an answer names a new error id, and the log's line says what
happened under it, so that an operator finds the cause and a caller reads no internals."""

import logging
import secrets

__all__ = ["ERROR_ID", "logged_error"]

ERROR_ID = object()
"""Stands, among a log line's arguments, where :func:`logged_error` puts the new id."""


def logged_error(
    logger: logging.Logger,
    message: str,
    *args: object,
    exc_info: BaseException | None = None,
) -> str:
    """Log ``message % args`` as an error under a new error id, which stands where
    :data:`ERROR_ID` is among ``args``; the id."""
    error_id = secrets.token_hex(6)
    filled = tuple(error_id if arg is ERROR_ID else arg for arg in args)
    logger.error(message, *filled, exc_info=exc_info)
    return error_id
