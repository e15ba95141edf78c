"""Token files for `memarch serve`: the format (comments, scopes), the refusals (group/other
permissions, another owner, a symlink, short or duplicate tokens, none at all), and the check
(constant-time, every token compared whatever matches)."""
from __future__ import annotations

import hmac
import os

import pytest

from memarch.app.serve import auth as auth_module
from memarch.app.serve.auth import load_token_file, parse_tokens
from memarch.errors import MemarchError

ADMIN, BOT = "a" * 32, "b1e2c3d4e5f60718293a4b5c6d7e8f90"


def token_file(tmp_path, text: str, mode: int = 0o600):
    f = tmp_path / "tokens"
    f.write_text(text)
    f.chmod(mode)
    return f


def test_the_format_tokens_scopes_and_comments(tmp_path):
    auth = load_token_file(token_file(tmp_path, f"# admin\n{ADMIN}\n\n  # the bot\n{BOT} ana bob\n"))
    admin, bot = auth.authenticate(f"Bearer {ADMIN}"), auth.authenticate(f"bearer  {BOT} ")
    assert admin.users is None and admin.allows("anyone") and not admin.scoped
    assert bot.users == {"ana", "bob"} and bot.allows("ana") and not bot.allows("carol") and bot.line == 5
    for header in (None, "", "Bearer", f"Basic {ADMIN}", f"Bearer {ADMIN}x", f"Bearer {ADMIN[:-1]}", ADMIN):
        assert auth.authenticate(header) is None, header


@pytest.mark.parametrize("text, needle", [
    ("", "no tokens"),
    ("# only a comment\n\n", "no tokens"),
    ("short ana\n", "at least 16"),
    (f"{ADMIN}\n{ADMIN} ana\n", "already on an earlier line"),
])
def test_a_malformed_token_file_is_one_line(tmp_path, text, needle):
    with pytest.raises(MemarchError, match=needle) as exc:
        load_token_file(token_file(tmp_path, text))
    assert "\n" not in str(exc.value) and ADMIN not in str(exc.value)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o666, 0o700 | 0o004])
def test_a_token_file_others_can_read_is_refused(tmp_path, mode):
    with pytest.raises(MemarchError, match=f"mode {mode:04o} .*chmod 600"):
        load_token_file(token_file(tmp_path, ADMIN, mode))


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_token_file_is_accepted(tmp_path, mode):
    assert len(load_token_file(token_file(tmp_path, ADMIN, mode)).tokens) == 1


def test_missing_symlinked_foreign_or_non_regular_files_are_refused(tmp_path, monkeypatch):
    with pytest.raises(MemarchError, match="No such file"):
        load_token_file(tmp_path / "nope")
    real = token_file(tmp_path, ADMIN)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(MemarchError, match="token file"):
        load_token_file(tmp_path / "link")
    with pytest.raises(MemarchError, match="not a regular file"):
        load_token_file(tmp_path)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(real).st_uid + 1)
    with pytest.raises(MemarchError, match="owned by uid"):
        load_token_file(real)


def test_every_token_is_compared_in_constant_time(tmp_path, monkeypatch):
    auth = load_token_file(token_file(tmp_path, f"{ADMIN}\n{BOT} ana\n{'c' * 20}\n"))
    calls, compare = [], hmac.compare_digest
    monkeypatch.setattr(auth_module.hmac, "compare_digest", lambda a, b: calls.append(len(a)) or compare(a, b))
    assert auth.authenticate(f"Bearer {ADMIN}").users is None  # the first matches; all three are compared
    assert calls == [32, 32, 32]


def test_parse_tokens_reads_text(tmp_path):
    assert [t.users for t in parse_tokens(f"{ADMIN}\n{BOT} ana\n")] == [None, frozenset({"ana"})]


# -- issue 51 (item 5): user ids with spaces, Unicode and quotes; one quoting rule ---------------------
@pytest.mark.parametrize("ids, users", [
    ("ana bob", {"ana", "bob"}),  # a file written before the quoting rule reads as it did
    ('"Ana Maria"', {"Ana Maria"}),
    ("Ana Maria", {"Ana", "Maria"}),  # unquoted: two ids, as before
    ("María 李雷 José", {"María", "李雷", "José"}),  # UTF-8, compared as written (NFC here)
    ('"Jose\\u0301"', {"Jose\u0301"}),  # NFD, a JSON escape: another user than NFC's José
    ('"say \\"hi\\"" o"neil it\'s', {'say "hi"', 'o"neil', "it's"}),  # a quote further in is taken as written
    ('\t"Ana\\u00a0Maria"\t team:42  ', {"Ana\u00a0Maria", "team:42"}),
])
def test_user_ids_follow_one_quoting_rule(ids, users):
    assert [t.users for t in parse_tokens(f"# a comment with a \" in it\n{ADMIN} {ids}\r\n")] == [frozenset(users)]


@pytest.mark.parametrize("ids, needle", [
    ('"Ana Maria', "user id 1: an unterminated quote: '\"Ana'"),
    ('ana "Ana"Maria', "user id 2: an unterminated quote"),
    ('"a\\x"', "user id 1: not a JSON string (Invalid \\escape)"),
    ("Ana\u00a0Maria", "user id 1: holds a blank character (U+00A0)"),
    ('""', "user_id: expected 1-200 characters"),  # every id against the user-id rule the routes apply
    ('" "', "user_id: expected 1-200 characters"),
    ("a/b", "user_id: expected 1-200 characters"),
    ('"line\\nbreak"', "user_id: expected 1-200 characters"),
    ("x" * 201, "user_id: expected 1-200 characters"),
])
def test_a_bad_user_id_is_one_line_naming_the_file_and_line(tmp_path, ids, needle):
    f = token_file(tmp_path, f"# admin\n{ADMIN}\n{BOT} {ids}\n")
    with pytest.raises(MemarchError) as exc:
        load_token_file(f)
    said = str(exc.value)
    assert said.startswith(f"token file {f}:3: ") and needle in said, said
    assert "\n" not in said and BOT not in said


def test_a_token_file_is_utf8(tmp_path):
    f = tmp_path / "tokens"
    f.write_bytes(b"\xef\xbb\xbf" + f"{BOT} María\n".encode())  # a byte order mark is ignored
    f.chmod(0o600)
    assert load_token_file(f).tokens[0].users == {"María"}
    f.write_bytes(f"{BOT} ".encode() + "María".encode("latin-1"))
    with pytest.raises(MemarchError, match="not UTF-8 text"):
        load_token_file(f)
