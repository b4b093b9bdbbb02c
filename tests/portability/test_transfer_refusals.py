"""What export_scope and import_jsonl refuse: a scope id that only begins like one, a bad line (reported with its
number and field, nothing written), a file that is not JSON lines, a reference leading nowhere, scattered scopes."""

import uuid

import pytest
from django.core.management import CommandError

from facts.models import (
    ConflictSet,
    Event,
    Fact,
    IdentityBlock,
    Procedure,
)
from privacy.services import project_erase
from tests.portability.scopes import PORT, build_scope, export, import_file, write

pytestmark = pytest.mark.django_db


def _first(records, kind):
    """bob's first record of that kind: the file's second subject, after alice's valid records."""
    return next(i for i, r in enumerate(records) if r["type"] == kind and r.get("subject_id") == "bob")


# Each change spoils one record and returns its index in the list (the header is 0).
def _set(kind, field, value):
    def change(records):
        i = _first(records, kind)
        records[i][field] = value
        return i

    return change


def _drop(kind, field):
    def change(records):
        i = _first(records, kind)
        del records[i][field]
        return i

    return change


def _supersede_nothing(records):
    i = next(i for i, r in enumerate(records) if r.get("subject_id") == "bob" and r.get("status") == "superseded")
    records[i]["superseded_by"] = None
    return i


def _rename_like_the_previous_block(records):
    i = _first(records, "identity_block") + 1
    records[i]["name"] = records[i - 1]["name"]
    return i


def _header(field, value):
    def change(records):
        records[0][field] = value
        return 0

    return change


def test_a_conflict_set_keeps_what_was_read_and_an_export_without_it_imports(tmp_path):
    # given a scope whose open conflict set was read as two counts of children, exported and erased
    build_scope("alice", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    sets = [r for r in records if r["type"] == "conflict_set"]
    assert {tuple(sorted(r["reading"])) for r in sets} == {(), ("attribute", "holder", "new", "old", "rule")}
    # when it is imported from a file written before sets kept their reading (no "reading" field)
    for record in sets:
        del record["reading"]
    import_file(write(tmp_path / "older.jsonl", records))
    # then every set is back, with an empty reading
    assert list(ConflictSet.objects.filter(project_id=PORT).values_list("reading", flat=True)) == [{}, {}, {}]


@pytest.mark.parametrize(
    "option, value", [("--project", "port ; drop"), ("--subject", "alice bob"), ("--project", "p" * 300)]
)
def test_export_refuses_a_scope_id_that_only_begins_like_one(option, value):
    # given an id whose first characters are valid and the rest not (a prefix match let it through)
    args = [option, value] if option == "--project" else ["--project", PORT, option, value]
    # when it is exported, then the command refuses it, naming the option and the rule
    with pytest.raises(CommandError, match=f"{option} must be 1-"):
        export(*args)


@pytest.mark.parametrize(
    "change, field, message",
    [
        (_set("fact", "importance", 2), "importance", "between 0 and 1"),
        (_set("fact", "recorded_from", "2026-01-01T10:00"), "recorded_from", "with an offset"),
        (_set("fact", "status", "forgotten"), "status", "must be one of active"),
        (_set("fact", "subject_id", "bob smith"), "subject_id", "letters, digits"),
        (_set("fact", "colour", "blue"), "colour", "unknown field"),
        (_drop("fact", "text"), "text", "missing"),
        (_set("event", "metadata", ["not", "an", "object"]), "metadata", "JSON object"),
        (_set("event", "type", "memo"), "type", "must be one of event"),
        (
            _set("conflict_set", "members", [{"fact": "nope", "added_at": "2026-01-01T00:00:00+00:00", "kept": None}]),
            "members[0].fact",
            "must be a UUID",
        ),
        (_set("conflict_set", "reading", "residence"), "reading", "JSON object"),
        (_supersede_nothing, "superseded_by", "names its successor"),
        (
            _set("event", "subject_id", ""),
            "subject_id",
            "letters, digits",
        ),  # only blocks and procedures are project-wide
        (_set("identity_block", "name", ""), "name", "1 to 100 characters"),
        (_set("identity_block", "text", "x" * 4001), "text", "1 to 4000 characters"),
        (_set("identity_block", "position", -1), "position", "an integer from 0"),
        (_set("identity_block", "position", 1.5), "position", "an integer from 0"),
        (_set("identity_block", "enabled", "yes"), "enabled", "true or false"),
        (_drop("identity_block", "created_at"), "created_at", "missing"),
        (_rename_like_the_previous_block, "name", "earlier in the file has this name"),
        (_set("procedure", "status", "deleted"), "status", "must be one of active, retracted"),
        (_set("procedure", "title", "t" * 201), "title", "1 to 200 characters"),
        (_set("procedure", "importance", -0.5), "importance", "between 0 and 1"),
        (_set("procedure", "embedding", ["a"]), "embedding", "list of finite numbers"),
        (_drop("procedure", "updated_at"), "updated_at", "missing"),
        (_header("version", 2), "version", "not supported"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_field_and_nothing_is_written(tmp_path, change, field, message):
    # given an export of two subjects, erased, with one of the second subject's records spoiled (the first
    # subject's records, before it, are valid)
    build_scope("alice", 20)
    build_scope("bob", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    assert records[1]["subject_id"] == "alice"
    line = change(records) + 1
    # when it is imported
    with pytest.raises(CommandError) as refused:
        import_file(write(tmp_path / "bad.jsonl", records))
    # then the error names the line and the field, and no scope was written
    assert f"line {line} field {field!r}: " in str(refused.value) and message in str(refused.value)
    assert "Nothing was written" in str(refused.value)
    assert not Fact.objects.exists() and not Event.objects.exists() and not ConflictSet.objects.exists()
    assert not IdentityBlock.objects.exists() and not Procedure.objects.exists()


def test_a_line_that_is_not_json_or_a_truncated_file_is_refused(tmp_path):
    # given an export
    build_scope("alice", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    lines = write(tmp_path / "x.jsonl", records)
    text = (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()
    # when a line is cut in the middle
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(text[:5] + [text[5][:40]] + text[6:]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 6: not a JSON line"):
        import_file(broken)
    # when the file lost its last lines
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text("\n".join(text[:-3]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 1 field 'counts': the header announces"):
        import_file(truncated)
    # then nothing was written
    assert lines and not Fact.objects.exists() and not Event.objects.exists()


def test_a_reference_leading_nowhere_rolls_back_its_scope_only(tmp_path):
    # given two subjects' export where bob's superseded fact names a successor that is in no file or table
    build_scope("alice", 20)
    build_scope("bob", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    i = next(i for i, r in enumerate(records) if r.get("subject_id") == "bob" and r.get("status") == "superseded")
    records[i]["superseded_by"] = str(uuid.uuid4())
    # when imported
    with pytest.raises(CommandError) as refused:
        import_file(write(tmp_path / "dangling.jsonl", records))
    # then the line and field are named, bob is rolled back, alice (before it) is in
    assert f"line {i + 1} field 'superseded_by'" in str(refused.value)
    assert f"Scope {PORT}/bob was rolled back; the 1 scopes before it were imported" in str(refused.value)
    assert not Fact.objects.filter(subject_id="bob").exists() and not Event.objects.filter(subject_id="bob").exists()
    assert Fact.objects.filter(subject_id="alice").count() == 20


def test_scattered_scopes_are_refused(tmp_path):
    # given a file where a subject's records come back after another subject's
    build_scope("alice", 10)
    build_scope("bob", 10)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    last_alice = max(i for i, r in enumerate(records) if r.get("subject_id") == "alice")
    records.append(records.pop(last_alice))
    # when imported, then refused at the returning line, with nothing written
    with pytest.raises(
        CommandError, match=rf"line {len(records)} field 'subject_id': scope {PORT}/alice appeared earlier"
    ):
        import_file(write(tmp_path / "scattered.jsonl", records))
    assert not Fact.objects.exists()
