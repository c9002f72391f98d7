"""NATS NKeys and JWTs made in a test, with the `cryptography` package (Debian's
python3-cryptography): user seeds for nkey authorization, and an operator / account /
user chain for nats-server's JWT (operator) mode, written as nsc writes them."""
import base64
import hashlib
import json
import os
import struct
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PREFIX_SEED = 18 << 3
PREFIXES = {"operator": 14 << 3, "account": 0, "user": 20 << 3}


def _crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def _b32(data):
    return base64.b32encode(data).decode().rstrip("=")


def _b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


class NKey:
    """An Ed25519 key pair in the NKeys encoding; kind is operator, account or user."""

    def __init__(self, kind, raw_seed=None):
        self.kind = kind
        self.raw_seed = raw_seed or os.urandom(32)
        self.key = Ed25519PrivateKey.from_private_bytes(self.raw_seed)
        pub = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        p = PREFIXES[kind]
        body = bytes([p]) + pub
        self.public = _b32(body + struct.pack("<H", _crc16(body)))
        body = bytes([PREFIX_SEED | (p >> 5), (p & 31) << 3]) + self.raw_seed
        self.seed = _b32(body + struct.pack("<H", _crc16(body)))

    def sign(self, data):
        return self.key.sign(data)


def jwt(issuer, subject_public, kind, nats, name="test", exp=None):
    """A NATS JWT for subject_public of the given kind, signed by issuer (an NKey)."""
    header = {"typ": "JWT", "alg": "ed25519-nkey"}
    claims = {"iat": int(time.time()) - 60, "iss": issuer.public, "name": name, "sub": subject_public,
              "nats": dict(nats, type=kind, version=2)}
    if exp is not None:
        claims["exp"] = int(exp)
    claims["jti"] = _b32(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest())
    signing_input = (_b64url(json.dumps(header).encode()) + "." + _b64url(json.dumps(claims).encode())).encode()
    return signing_input.decode() + "." + _b64url(issuer.sign(signing_input))


def creds_file(user_jwt, user_seed):
    return ("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n\n"
            "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n\n"
            "*************************************************************\n" % (user_jwt, user_seed))


class Operator:
    """An operator, one account with JetStream, and users of it. server_conf() is the
    nats-server configuration of operator mode with a memory resolver."""

    def __init__(self):
        self.operator = NKey("operator")
        self.account = NKey("account")
        self.operator_jwt = jwt(self.operator, self.operator.public, "operator", {})
        limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True,
                  "conn": -1, "leaf": -1, "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
        self.account_jwt = jwt(self.operator, self.account.public, "account", {"limits": limits})
        # JetStream needs a system account (no JetStream of its own).
        self.system = NKey("account")
        self.system_jwt = jwt(self.operator, self.system.public, "account", {}, name="SYS")

    def user(self, exp=None):
        """(creds text, user NKey) for a new user of the account."""
        u = NKey("user")
        lim = {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}
        return creds_file(jwt(self.account, u.public, "user", lim, exp=exp), u.seed), u

    def server_conf(self, operator_jwt_path):
        return ('operator: "%s"\nsystem_account: %s\nresolver: MEMORY\nresolver_preload: {\n  %s: "%s"\n  %s: "%s"\n}\n'
                % (operator_jwt_path, self.system.public, self.account.public, self.account_jwt,
                   self.system.public, self.system_jwt))
