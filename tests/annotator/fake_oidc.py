"""A small OpenID Connect provider on 127.0.0.1 for the sign-in tests: a real HTTP server.

It serves what a Keycloak or GitLab would for the authorization-code flow with PKCE: the
discovery document, an authorization endpoint that signs in `next_user` at once and redirects
back with a code, a token endpoint that checks the client's secret, the redirect URI and the
PKCE ``code_verifier`` against the ``code_challenge`` (S256), and answers with an access token
and an RS256-signed id_token, the JWKS with the public key, and userinfo.

What it saw is kept for the tests to assert on: `pkce_checked` (verifiers that matched),
`refused` (reasons it refused a token request).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

CLIENT_ID = "annotator-test-client"
CLIENT_SECRET = "s3cret-never-shown-7f1c"
KEY_ID = "test-key-1"


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@functools.cache
def _signing_key() -> rsa.RSAPrivateKey:
    """One RSA key per test process: making a 2048-bit key takes 0.1-0.4 s, and each provider
    is a new issuer on its own port, so none of them tells its key from another's."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class FakeOIDCProvider:
    def __init__(self) -> None:
        self.key = _signing_key()
        self.next_user: dict[str, Any] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.access_tokens: dict[str, dict[str, Any]] = {}
        self.pkce_checked: list[str] = []
        self.refused: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.server.server_port}"
        # shutdown() waits for the loop's next poll: 20 ms, not the default 0.5 s per test.
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeOIDCProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- what the endpoints answer ------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post"],
        }

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": KEY_ID, "use": "sig", "alg": "RS256"})
        return {"keys": [jwk]}

    def authorize(self, query: dict[str, str]) -> str:
        """The redirect back to the client, with a code for `next_user`."""
        assert query["client_id"] == CLIENT_ID
        assert query["response_type"] == "code"
        code = secrets.token_urlsafe(16)
        self.codes[code] = {
            "user": dict(self.next_user),
            "challenge": query.get("code_challenge"),
            "method": query.get("code_challenge_method"),
            "redirect_uri": query["redirect_uri"],
            "nonce": query.get("nonce"),
        }
        back = {"code": code, "state": query.get("state", "")}
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        grant = self.codes.pop(form.get("code", ""), None)  # a code works once
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return self._refuse("client authentication")
        if grant is None:
            return self._refuse("unknown or used code")
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return self._refuse("redirect_uri differs")
        verifier = form.get("code_verifier", "")
        if grant["method"] != "S256" or not verifier or _s256(verifier) != grant["challenge"]:
            return self._refuse("PKCE code_verifier does not match the code_challenge")
        self.pkce_checked.append(verifier)
        user = grant["user"]
        access_token = secrets.token_urlsafe(16)
        self.access_tokens[access_token] = user
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            **({"nonce": grant["nonce"]} if grant["nonce"] else {}),
            **user,
        }
        id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": KEY_ID})
        return 200, {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
        }

    def _refuse(self, reason: str) -> tuple[int, dict[str, Any]]:
        self.refused.append(reason)
        return 400, {"error": "invalid_grant", "error_description": reason}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._json(200, provider.discovery())
                elif url.path == "/jwks":
                    self._json(200, provider.jwks())
                elif url.path == "/authorize":
                    self.send_response(302)
                    self.send_header("Location", provider.authorize(query))
                    self.end_headers()
                elif url.path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    user = provider.access_tokens.get(token)
                    if user is None:
                        self._json(401, {"error": "invalid_token"})
                    else:
                        self._json(200, user)
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                form = {k: v[0] for k, v in parse_qs(body).items()}
                if urlsplit(self.path).path == "/token":
                    self._json(*provider.token(form))
                else:
                    self._json(404, {"error": "not_found"})

        return Handler
