"""The ``http`` embedder: an OpenAI-shaped ``POST /v1/embeddings`` endpoint.

Standard library only (``urllib``): indexing through an endpoint needs neither
torch nor any extra package.

Request: ``{"input": [texts...], "model": "<id>"}`` with ``Content-Type:
application/json``, and ``Authorization: Bearer <key>`` only when a key
variable is configured. Response: ``{"data": [{"index": i, "embedding": [...]}]}``.

Checks, each a refusal: rows are put in the order of their ``index`` (not of
arrival); the count must equal the inputs; every width must equal the declared
``dimensions`` and the width already received; every component must be a
number. The key is read from the environment variable the vault names; it is
never part of a message, the index, or ``repr``.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import numpy as np

from producer.embedders.base import EmbedderSpec, EmbedError, OnBatch, check_common
from producer.index_checks import dimensions_ok
from producer.index_format import MAX_DIMENSIONS

BATCH_SIZE = 16
TIMEOUT = 60.0
BODY_EXCERPT = 500


def check_http_spec(spec: EmbedderSpec, environ: Mapping[str, str]) -> None:
    """Refusals beyond the table's own (``EmbedderConfig.check``) that need no card and
    no request; run before the vault is read."""
    if spec.offline:
        raise EmbedError(
            "--offline refuses the network, and the `http` provider is the network: "
            "build with the `local` provider, or drop --offline"
        )
    parsed = urllib.parse.urlsplit(str(spec.endpoint))
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise EmbedError(f"`{spec.endpoint}` is not an http:// or https:// URL")
    if spec.api_key_env:
        if not environ.get(spec.api_key_env):
            raise EmbedError(
                f"${spec.api_key_env} is unset or empty, and `{spec.endpoint}` is configured "
                "to be called with it"
            )


def http_identity(spec: EmbedderSpec) -> tuple[str, str, int | None]:
    return str(spec.model), str(spec.revision), spec.dimensions


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is refused: following it would resend the card texts (and the
    key) somewhere the vault did not name."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"redirected to {newurl}; name the final URL as the endpoint",
            headers,
            fp,
        )


class HttpEmbedder:
    provider = "http"

    def __init__(
        self,
        endpoint: str,
        model_id: str,
        revision: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = TIMEOUT,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.endpoint = endpoint
        self.model_id = model_id
        self.revision = revision
        self.dimensions = dimensions
        self.declared_dimensions = dimensions
        self.timeout = timeout
        self.batch_size = batch_size
        self.__key = api_key or None
        self._opener = urllib.request.build_opener(_NoRedirect())

    @classmethod
    def from_spec(cls, spec: EmbedderSpec, environ: Mapping[str, str]) -> HttpEmbedder:
        check_common(spec)
        check_http_spec(spec, environ)
        key = environ.get(spec.api_key_env) if spec.api_key_env else None
        return cls(
            str(spec.endpoint),
            str(spec.model),
            str(spec.revision),
            api_key=key,
            dimensions=spec.dimensions,
        )

    def __repr__(self) -> str:
        auth = "with a key" if self.__key else "without a key"
        return f"HttpEmbedder({self.endpoint!r}, model={self.model_id!r}, {auth})"

    # -- messages never carry the key, whatever a server echoes back
    def _scrub(self, text: str) -> str:
        if self.__key and self.__key in text:
            text = text.replace(self.__key, "[key]")
        return text

    def _fail(self, message: str) -> EmbedError:
        return EmbedError(self._scrub(message))

    def _post(self, texts: list[str]) -> Any:
        body = json.dumps({"input": texts, "model": self.model_id}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        req = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        url = self.endpoint
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read().decode("utf-8", "replace")[:BODY_EXCERPT]
            except Exception:  # noqa: BLE001 - the body is only decoration
                detail = ""
            detail = _error_message(detail) or detail
            raise self._fail(
                f"{url}: HTTP {exc.code} {exc.reason}" + (f": {detail}" if detail else "")
            ) from None
        except TimeoutError:
            raise self._fail(f"{url}: no answer within {self.timeout:g} s") from None
        except urllib.error.URLError as exc:
            raise self._fail(f"{url}: unreachable: {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise self._fail(f"{url}: unreachable: {exc}") from None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._fail(f"{url}: the response is not JSON: {exc}") from None

    def _vectors(self, payload: Any, asked: int, offset: int) -> list[list[float]]:
        url = self.endpoint
        if not isinstance(payload, dict):
            raise self._fail(f"{url}: the response is not a JSON object")
        if "error" in payload and payload["error"]:
            err = payload["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise self._fail(f"{url}: {msg}")
        data = payload.get("data")
        if not isinstance(data, list):
            raise self._fail(f"{url}: the response has no `data` list")
        if len(data) != asked:
            raise self._fail(
                f"{url}: {len(data)} vectors for {asked} inputs; a missing vector would "
                "silently shift every card onto another card's text"
            )
        if all(isinstance(r, dict) and "index" in r for r in data):
            indices = [r["index"] for r in data]
            if any(isinstance(i, bool) or not isinstance(i, int) for i in indices) or sorted(
                indices
            ) != list(range(asked)):
                raise self._fail(
                    f"{url}: the rows' `index` values are not 0..{asked - 1}, each once"
                )
            data = sorted(data, key=lambda r: r["index"])
        elif any(isinstance(r, dict) and "index" in r for r in data):
            raise self._fail(f"{url}: some rows carry an `index` and some do not")
        out: list[list[float]] = []
        for pos, row in enumerate(data):
            i = offset + pos
            emb = row.get("embedding") if isinstance(row, dict) else None
            if not isinstance(emb, list) or not emb:
                raise self._fail(f"{url}: vector {i}: no `embedding` list in the response")
            for x in emb:
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
                    raise self._fail(
                        f"{url}: vector {i}: `embedding` holds {x!r}, which is not a number"
                    )
            width = len(emb)
            if not dimensions_ok(width):
                raise self._fail(
                    f"{url}: vector {i}: {width} dimensions, and the reader accepts at most "
                    f"{MAX_DIMENSIONS}"
                )
            if self.dimensions is None:
                self.dimensions = width
            elif width != self.dimensions:
                raise self._fail(
                    f"{url}: vector {i}: {width} dimensions where {self.dimensions} were "
                    "expected; the model or its `dimensions` has changed"
                )
            out.append(emb)
        return out

    def embed(self, texts: list[str], on_batch: OnBatch | None = None) -> np.ndarray:
        """Raw vectors as the endpoint sent them (normalised later by ``embed_texts``)."""
        texts = list(texts)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            rows.extend(self._vectors(self._post(batch), len(batch), start))
            if on_batch is not None:
                on_batch(len(rows))
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), self.dimensions or 0)


def _error_message(body: str) -> str | None:
    """The ``error.message`` of an OpenAI-shaped error body, if that is what it is."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
    return None
