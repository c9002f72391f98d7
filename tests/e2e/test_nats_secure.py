"""A secured bus: a real nats-server with TLS (a CA and certificates made here with
openssl, the client verified too), NKey users, an operator/account/user JWT chain
(keys and JWTs made here, natskeys.py), a token and a password. Each carries events
ingest -> flow -> sink, with the stream read back over the same security; a wrong CA, a
wrong seed and an expired JWT are refused with an error naming the cause; gust -t checks
every file with its file:line; no secret reaches the log or a command line."""
import json
import os
import subprocess
import time

import natskeys
from gustlib import BUILD, GUST, Checks, Gust, HttpSink, NatsServer, TempDir, make_certs, wait_for

FLOW = 'return { source = "ev.sec", on_event = function(ev) emit("ev.sec.out", { n = ev.n, via = "flow" }) end }\n'

CONF = """
plugin_dir %(plugins)s;
plugin http_out;
http { listen 127.0.0.1:@PORT@; }
nats {
    url %(url)s;
%(keys)s
    publish_timeout 3s;
}
flow sec { script %(tmp)s/sec.lua; }
sink out { use http_out; source ev.sec.out; url http://127.0.0.1:%(sink)d/hit; }
"""


def conf(tmp, url, keys, sink_port=1):
    return CONF % {"plugins": os.path.join(BUILD, "plugins"), "url": url, "keys": keys, "tmp": tmp.path,
                   "sink": sink_port}


def secrets_hidden(t, g, secrets, what):
    log = g.log()
    for s in secrets:
        t.check(s not in log, "%s: a secret is in the log" % what)
    with open("/proc/%d/cmdline" % g.proc.pid, "rb") as f:
        argv = f.read().decode(errors="replace")
    for s in secrets:
        t.check(s not in argv, "%s: a secret is on gust's command line" % what)


def end_to_end(t, tmp, nats, keys, what, secrets=()):
    """Events posted to gust reach the sink through the flow, and the stream holds them."""
    sink = HttpSink()
    g = Gust(tmp, conf(tmp, nats.url, keys, sink.port), wait_healthy=False)
    try:
        wait_for(lambda: g.healthy(), 20, what + ": gust /healthz 200")
        for n in range(5):
            status, body, _ = g.request("POST", "/ingest/sec", json.dumps({"n": n, "run": what}).encode())
            t.eq(status, 202, "%s: ingest %d: %r" % (what, n, body))
        got = wait_for(lambda: len(sink.received()) >= 5 and sink.received(), 15, what + ": the sink to get 5")
        t.eq(sorted(json.loads(b)["n"] for b in got), list(range(5)), what + ": what the sink got")
        t.check(all(json.loads(b)["via"] == "flow" for b in got), what + ": through the flow")
        stored = [json.loads(m[2]) for m in nats.read_stream() if m[1] == "ev.sec"]
        t.eq(sorted(m["n"] for m in stored if m["run"] == what), list(range(5)), what + ": the stream, read back")
        secrets_hidden(t, g, secrets, what)
    except AssertionError as e:
        t.check(False, "%s: %s\n%s" % (what, e, g.log()[-3000:]))
    finally:
        g.stop()
        sink.close()


def refused(t, tmp, url, keys, want, what, secrets=()):
    """A server that answers but refuses gust (TLS, credentials): gust stops at start with
    exit status 1 and an error naming the server and the cause."""
    g = Gust(tmp, conf(tmp, url, keys), wait_healthy=False)
    try:
        rc = g.proc.wait(30)
        t.eq(rc, 1, what + ": exit status")
        log = g.log()
        t.check("[error] bus: %s: " % url in log and want in log, "%s: %r not in the error: %r" % (what, want, log))
        for s in secrets:
            t.check(s not in log, "%s: a secret is in the log" % what)
    except Exception as e:
        g.proc.kill()
        t.check(False, "%s: %s\n%s" % (what, e, g.log()[-3000:]))


def test_tls(t, tmp):
    c = make_certs(tmp)
    server = ('tls {\n  cert_file: "%s"\n  key_file: "%s"\n  ca_file: "%s"\n  verify: true\n  timeout: 2\n}\n'
              % (c["cert"], c["key"], c["ca"]))
    client = ["--tls-ca", c["ca"], "--tls-cert", c["client_cert"], "--tls-key", c["client_key"]]
    nats = NatsServer(tmp, conf=server, client_args=client, scheme="tls", host="localhost")
    try:
        keys = "    tls_ca %s;\n    tls_cert %s;\n    tls_key %s;" % (c["ca"], c["client_cert"], c["client_key"])
        end_to_end(t, tmp, nats, keys, "TLS (tls://, client certificate)")
        # The same with nats:// and the tls_* keys alone.
        nats.scheme = "nats"
        end_to_end(t, tmp, nats, keys, "TLS (nats:// with tls_ca)")
        nats.scheme = "tls"
        bad = "    tls_ca %s;\n    tls_cert %s;\n    tls_key %s;" % (c["other_ca"], c["client_cert"], c["client_key"])
        refused(t, tmp, nats.url, bad, "SSL handshake error: 20:unable to get local issuer certificate",
                "TLS with a CA that did not sign the server's")
        # The certificate is for localhost and 127.0.0.1: another name is refused.
        named = keys + "\n    tls_server_name gust.example;"
        refused(t, tmp, nats.url, named, "hostname mismatch", "TLS with a server name the certificate lacks")
        nokey = "    tls_ca %s;" % c["ca"]
        refused(t, tmp, nats.url, nokey, "does it want a client certificate, tls_cert and tls_key?",
                "TLS without the client certificate the server asks for")
    finally:
        nats.stop()
    plain = NatsServer(tmp)
    try:
        refused(t, tmp, "tls://127.0.0.1:%d" % plain.port, "    tls_ca %s;" % c["ca"], "Secure Connection",
                "tls:// to a server without TLS")
    finally:
        plain.stop()


def test_nkey(t, tmp):
    user, other = natskeys.NKey("user"), natskeys.NKey("user")
    seed = tmp.file("keys/user.nk", user.seed + "\n")
    wrong = tmp.file("keys/other.nk", other.seed + "\n")
    nats = NatsServer(tmp, conf="authorization { users: [ { nkey: %s } ] }\n" % user.public,
                      client_args=["--nkey-seed", seed])
    try:
        end_to_end(t, tmp, nats, "    nkey_seed %s;" % seed, "NKey user", secrets=[user.seed])
        refused(t, tmp, nats.url, "    nkey_seed %s;" % wrong, "Authorization Violation",
                "a seed the server does not know", secrets=[other.seed])
    finally:
        nats.stop()


def test_jwt(t, tmp):
    op = natskeys.Operator()
    op_jwt = tmp.file("keys/operator.jwt", op.operator_jwt)
    creds_text, user = op.user()
    creds = tmp.file("keys/user.creds", creds_text)
    nats = NatsServer(tmp, conf=op.server_conf(op_jwt), client_args=["--creds", creds])
    try:
        end_to_end(t, tmp, nats, "    creds %s;" % creds, "operator/account/user JWT", secrets=[user.seed])
        # A user of an account this server does not know.
        stranger_text, stranger = natskeys.Operator().user()
        stranger_creds = tmp.file("keys/stranger.creds", stranger_text)
        refused(t, tmp, nats.url, "    creds %s;" % stranger_creds, "Authorization Violation",
                "a JWT of an unknown account", secrets=[stranger.seed])
        # An expired JWT is caught before any connection: gust -t and the start say so.
        expired_text, _ = op.user(exp=time.time() - 3600)
        expired = tmp.file("keys/expired.creds", expired_text)
        text = conf(tmp, nats.url, "    creds %s;" % expired).replace("@PORT@", "1")
        path = tmp.file("host.conf", text)
        line = text.split("\n").index("    creds %s;" % expired) + 1
        for args, what in ((["-t"], "gust -t"), ([], "gust")):
            p = subprocess.run([GUST] + args + ["-c", path], capture_output=True, text=True, timeout=30)
            t.eq(p.returncode, 1, what + " with an expired JWT exits 1")
            t.check((path + ":%d: creds %s: the user JWT expired at " % (line, expired)) in p.stderr,
                    "%s names file:line and the expiry: %r" % (what, p.stderr))
    finally:
        nats.stop()


def test_token_and_password(t, tmp):
    token = "tok-" + os.urandom(8).hex()
    token_file = tmp.file("keys/token", token + "\n")
    nats = NatsServer(tmp, args=["--auth", token], client_args=["--token-file", token_file])
    try:
        end_to_end(t, tmp, nats, "    token_file %s;" % token_file, "token", secrets=[token])
    finally:
        nats.stop()
    password = "pw-" + os.urandom(8).hex()
    pw_file = tmp.file("keys/password", password + "\n")
    nats = NatsServer(tmp, args=["--user", "gust", "--pass", password],
                      client_args=["--user", "gust", "--password-file", pw_file])
    try:
        end_to_end(t, tmp, nats, "    user gust;\n    password_file %s;" % pw_file, "user/password (file)",
                   secrets=[password])
        os.environ["GUST_TEST_NATS_PW"] = password
        end_to_end(t, tmp, nats, "    user gust;\n    password_env GUST_TEST_NATS_PW;", "user/password (env)",
                   secrets=[password])
        os.environ["GUST_TEST_NATS_PW"] = "wrong-" + password
        refused(t, tmp, nats.url, "    user gust;\n    password_env GUST_TEST_NATS_PW;", "Authorization Violation",
                "a wrong password", secrets=[password])
        del os.environ["GUST_TEST_NATS_PW"]
    finally:
        nats.stop()


def test_checks(t, tmp):
    """gust -t: every file, seed and combination checked, errors naming file:line."""
    c = make_certs(tmp, "tls-check")
    user = natskeys.NKey("user")
    seed = tmp.file("keys/check.nk", user.seed + "\n")
    # A typo in the middle: the last character also holds padding bits, which a change
    # there may leave the decoded seed (and its checksum) untouched.
    typo = "A" if user.seed[10] != "A" else "B"
    bad_seed = tmp.file("keys/bad.nk", user.seed[:10] + typo + user.seed[11:] + "\n")
    acct_seed = tmp.file("keys/acct.nk", natskeys.NKey("account").seed + "\n")
    op = natskeys.Operator()
    creds_text, _ = op.user()
    no_seed = tmp.file("keys/noseed.creds", creds_text.split("-----BEGIN USER NKEY SEED")[0])
    other_seed_text = creds_text.replace(creds_text.split("-----BEGIN USER NKEY SEED-----\n")[1].split("\n")[0],
                                         natskeys.NKey("user").seed)
    mismatched = tmp.file("keys/mismatch.creds", other_seed_text)
    token_file = tmp.file("keys/check.token", "t0ken\n")
    empty = tmp.file("keys/empty", "\n")
    missing = os.path.join(tmp.path, "keys", "missing")
    p = os.path.join(tmp.path, "check.conf")
    cases = [
        ("url tls://localhost:4222;\n  tls_ca %s;" % missing, ":3: tls_ca %s: No such file" % missing, "a missing CA"),
        ("url tls://localhost:4222;\n  tls_ca %s;" % seed, ":3: tls_ca %s: not a PEM CA" % seed, "a CA that is no PEM"),
        ("url tls://localhost:4222;\n  tls_cert %s;" % c["client_cert"], ":3: tls_cert needs tls_key too",
         "a certificate without its key"),
        ("url tls://localhost:4222;\n  tls_cert %s;\n  tls_key %s;" % (c["client_cert"], c["key"]),
         ":4: tls_key %s is not the key of tls_cert" % c["key"], "a key of another certificate"),
        ("url nats://localhost:4222;\n  nkey_seed %s;" % bad_seed, ":3: nkey_seed %s: the seed's checksum" % bad_seed,
         "a seed with a typo"),
        ("url nats://localhost:4222;\n  nkey_seed %s;" % acct_seed, ":3: nkey_seed %s: not a user seed" % acct_seed,
         "an account seed"),
        ("url nats://localhost:4222;\n  nkey_seed %s;" % token_file, ":3: nkey_seed %s: no user seed" % token_file,
         "a seed file without a seed"),
        ("url nats://localhost:4222;\n  creds %s;" % no_seed, ":3: creds %s: no user seed" % no_seed,
         "creds without the seed"),
        ("url nats://localhost:4222;\n  creds %s;" % mismatched, ":3: creds %s: the seed is not the JWT's user's"
         % mismatched, "creds whose seed is another user's"),
        ("url nats://localhost:4222;\n  creds %s;\n  nkey_seed %s;" % (no_seed, seed),
         ":4: creds and nkey_seed: give one way", "two ways of authenticating"),
        ("url nats://localhost:4222;\n  user gust;", ":3: user needs password_file or password_env",
         "a user without a password"),
        ("url nats://localhost:4222;\n  user gust;\n  password_env GUST_TEST_UNSET_PW;",
         ":4: password_env: variable GUST_TEST_UNSET_PW is not set", "an unset password variable"),
        ("url nats://localhost:4222;\n  token_file %s;" % empty, ":3: token_file %s is empty" % empty,
         "an empty token file"),
        ("url nats://localhost:4222;\n  token_file %s;" % missing, ":3: token_file %s: No such file" % missing,
         "a missing token file"),
        ("url nats://u:p@localhost:4222;\n  token_file %s;" % token_file, ":2: url: credentials in a URL and in",
         "credentials twice"),
        ("nkey_seed %s;" % seed, ":2: nkey_seed needs a `url`", "a seed for the embedded server"),
        ("url nats://localhost:4222;\n  max_pings_out 0;", ":3: max_pings_out must be", "max_pings_out 0"),
        ("url nats://localhost:4222;\n  ping_interval 10ms;", ":3: ping_interval must be", "a 10 ms ping interval"),
    ]
    for body, want, what in cases:
        with open(p, "w") as f:
            f.write("nats {\n  %s\n}\n" % body)
        r = subprocess.run([GUST, "-t", "-c", p], capture_output=True, text=True)
        t.eq(r.returncode, 1, what + ": exit status")
        t.check(p + want in r.stderr, "%s: %r not in %r" % (what, p + want, r.stderr))
        t.check("t0ken" not in r.stderr and user.seed not in r.stderr, what + ": no secret in the message")
    good = ("url tls://localhost:4222;\n  tls_ca %s;\n  tls_cert %s;\n  tls_key %s;\n  nkey_seed %s;"
            "\n  ping_interval 500ms;\n  max_pings_out 3;" % (c["ca"], c["client_cert"], c["client_key"], seed))
    with open(p, "w") as f:
        f.write("nats {\n  %s\n}\n" % good)
    r = subprocess.run([GUST, "-t", "-c", p], capture_output=True, text=True)
    t.eq(r.returncode, 0, "a good secured nats block: %r" % r.stderr)


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("sec.lua", FLOW)
    try:
        test_checks(t, tmp)
        test_tls(t, tmp)
        test_nkey(t, tmp)
        test_jwt(t, tmp)
        test_token_and_password(t, tmp)
    finally:
        tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
