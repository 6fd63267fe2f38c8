"""Annotator flows over HTTP: edits kept whatever button is pressed, action and task edits validated by the
schema, undo, blind overlap, comments, leases, filters, "done" keyed by content, κ over (verdict, reason),
adjudication — the real FastAPI app in-process over a real Parquet version and a real SQLite database.
(The same flows in a real browser: ``test_review_browser.py``.)
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest
import test_review_support as rs
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from review.app import ReviewConfig, create_app
from review.auth import add_annotator
from review.db import Lease, Role, utcnow
from review.db import make_engine as engine_for
from review.labels import add_label, iter_labels
from schemas import Action

CSRF_RE = re.compile(r'name="csrf_token" value="([0-9a-f]{64})"')


@pytest.fixture
def env(tmp_path):
    version = rs.build_version(tmp_path / "dataset", n_traj=4, n_steps=3, flagged=True)
    engine = engine_for(f"sqlite:///{tmp_path / 'labels.sqlite'}")
    with Session(engine) as db:
        add_annotator(db, "alice", "alice-password")
        add_annotator(db, "bob", "bob-password")
        add_annotator(db, "carol", "carol-password", role=Role.ADJUDICATOR)
    app = create_app(ReviewConfig(data_dir=version, labels_per_sample=1, overlap=0.0), engine)
    yield app, engine, app.state.review.ds
    engine.dispose()


def login(app, name: str) -> tuple[TestClient, str]:
    client = TestClient(app, base_url="http://review.test")
    token = CSRF_RE.search(client.get("/login").text).group(1)
    r = client.post("/login", data={"username": name, "password": f"{name}-password", "csrf_token": token},
                    follow_redirects=False)
    assert r.status_code == 303, r.text
    return client, CSRF_RE.search(client.get("/queue").text).group(1)


def page_form(html: str) -> dict[str, str]:
    """The label form's fields as a browser would submit them untouched (inputs, selects, text areas)."""
    form = html[html.index('id="label-form"'):html.index("</form>", html.index('id="label-form"'))]
    fields: dict[str, str] = {}
    for m in re.finditer(r'<input[^>]*name="([^"]+)"[^>]*>', form):
        value = re.search(r'value="([^"]*)"', m.group(0))
        fields[m.group(1)] = unescape(value.group(1)) if value else ""
    for m in re.finditer(r'<textarea name="([^"]+)"[^>]*>(.*?)</textarea>', form, re.S):
        fields[m.group(1)] = unescape(m.group(2))
    for m in re.finditer(r'<select name="([^"]+)".*?</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', m.group(0))
        fields[m.group(1)] = unescape(chosen.group(1)) if chosen else ""
    return fields


def unescape(s: str) -> str:
    import html

    return html.unescape(s)


def labels(engine):
    with Session(engine) as db:
        return list(iter_labels(db))


def first_of(ds, action_type: str):
    return sorted((r for r in ds.refs.values() if r.action_type == action_type and r.train_target
                   and not r.negative), key=lambda r: r.id)[0]


def test_accept_after_typing_keeps_the_edit_and_reject_keeps_it_as_a_suggestion(env):
    app, engine, ds = env
    client, _ = login(app, "alice")
    ref = first_of(ds, "click")
    form = page_form(client.get(f"/samples/{quote(ref.id, safe='')}").text)
    form.update(instruction="Tap the first item in the list", verdict="accept")
    r = client.post("/labels", data=form, follow_redirects=False)
    assert r.status_code == 303
    (lab,) = labels(engine)
    assert (lab.verdict, lab.instruction, lab.action_json, lab.task) == (
        "edit", "Tap the first item in the list", None, None)  # typed text survived Accept
    other = first_of(ds, "type")
    form = page_form(client.get(f"/samples/{quote(other.id, safe='')}").text)
    form.update(reasoning="It should type into the search box.", verdict="reject", reason_code="bad_reasoning",
                comment="see the reasoning")
    client.post("/labels", data=form)
    lab = labels(engine)[-1]
    assert (lab.verdict, lab.reason_code, lab.reasoning, lab.comment) == (
        "reject", "bad_reasoning", "It should type into the search box.", "see the reasoning")


def test_a_refused_submission_keeps_everything_typed(env):
    app, engine, ds = env
    client, _ = login(app, "alice")
    ref = first_of(ds, "click")
    form = page_form(client.get(f"/samples/{quote(ref.id, safe='')}").text)
    form.update(instruction="My better instruction", task="A better task", comment="why", verdict="reject")
    r = client.post("/labels", data=form)  # no reason given
    assert r.status_code == 400 and "reason_code" in r.text
    again = page_form(r.text)
    assert (again["instruction"], again["task"], again["comment"]) == ("My better instruction", "A better task", "why")
    # Skip with edits asks first; "discard" really skips.
    form.update(verdict="skip")
    r = client.post("/labels", data=form)
    assert r.status_code == 400 and "Discard changes and skip" in r.text
    assert page_form(r.text)["instruction"] == "My better instruction"
    assert client.post("/labels", data={**form, "verdict": "discard"}, follow_redirects=False).status_code == 303
    assert labels(engine) == []


def test_action_edits_are_validated_by_the_schema(env):
    app, engine, ds = env
    client, _ = login(app, "alice")
    ref = first_of(ds, "click")
    url = f"/samples/{quote(ref.id, safe='')}"
    base = page_form(client.get(url).text)
    outside = {**base, "a_x": "1400", "verdict": "edit"}
    r = client.post("/labels", data=outside)
    assert r.status_code == 400 and "action.x" in r.text and "outside the 1280x720 image" in r.text
    assert page_form(r.text)["a_x"] == "1400"  # the bad value stays for the annotator to fix
    r = client.post("/labels", data={**base, "a_type": "click", "b_x1": "10", "b_y1": "", "b_x2": "", "b_y2": "",
                                     "verdict": "edit"})
    assert r.status_code == 400 and "target_bbox" in r.text
    # Move the point, redraw the box, make it a right-click: one edit.
    moved = {**base, "a_x": "300", "a_y": "222", "a_type": "right_click", "b_x1": "250", "b_y1": "200",
             "b_x2": "360", "b_y2": "250", "verdict": "accept"}
    assert client.post("/labels", data=moved, follow_redirects=False).status_code == 303
    lab = labels(engine)[-1]
    action = Action.model_validate_json(lab.action_json)
    assert lab.verdict == "edit" and action.full_type == "right_click" and action.point == (300, 222)
    assert (action.target_bbox.x1, action.target_bbox.y2) == (250, 250) and action.point_norm == (234, 308)
    # Changing the type to one without a point drops the point; a type action needs its text.
    typed = first_of(ds, "type")
    form = page_form(client.get(f"/samples/{quote(typed.id, safe='')}").text)
    r = client.post("/labels", data={**form, "a_text": "", "verdict": "edit"})
    assert r.status_code == 400 and "needs text" in r.text
    client.post("/labels", data={**form, "a_text": "oat milk", "verdict": "edit"})
    assert Action.model_validate_json(labels(engine)[-1].action_json).text == "oat milk"
    back = first_of(ds, "long_press")
    form = page_form(client.get(f"/samples/{quote(back.id, safe='')}").text)
    client.post("/labels", data={**form, "a_type": "navigate_back", "verdict": "edit"})
    nav = json.loads(labels(engine)[-1].action_json)
    assert nav == {"type": "navigate_back", "image_width": 1280, "image_height": 720}


def test_undo_withdraws_the_verdict_and_offers_the_sample_again_with_its_edits(env):
    app, engine, _ds = env
    client, _ = login(app, "alice")
    first = client.get("/queue/lowest_score/next?pos=0", follow_redirects=False).headers["location"]
    sid = unquote(urlsplit(first).path.split("/samples/")[1])
    form = page_form(client.get(first).text)
    form.update(instruction="Corrected words", verdict="accept")
    after = client.post("/labels", data=form, follow_redirects=False).headers["location"]
    assert parse_qs(urlsplit(after).query)["undo"] and parse_qs(urlsplit(after).query)["back"] == ["0"]
    page = client.get(after, follow_redirects=True).text
    assert 'data-testid="undo"' in page and "Corrected words" not in page.split('data-testid="undo"')[0]
    undo = re.search(r'<form method="post" action="/labels/undo".*?</form>', page, re.S).group(0)
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', undo))
    r = client.post("/labels/undo", data=fields, follow_redirects=False)
    assert r.status_code == 303 and quote(sid, safe="") in r.headers["location"]
    restored = client.get(r.headers["location"]).text
    assert page_form(restored)["instruction"] == "Corrected words"  # the withdrawn edit is offered again
    assert [lab.verdict for lab in labels(engine)] == ["edit", "retract"]
    # The sample is mine to label again: the queue offers it first.
    again = client.get("/queue/lowest_score/next?pos=0", follow_redirects=False).headers["location"]
    assert quote(sid, safe="") in again
    # Undoing twice is refused (the label is no longer the current verdict).
    assert client.post("/labels/undo", data=fields).status_code == 409


def test_blind_overlap_hides_other_verdicts_and_comments_before_and_after_i_label(env):
    app, _engine, ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    ref = first_of(ds, "click")
    url = f"/samples/{quote(ref.id, safe='')}"
    form = page_form(alice.get(url).text)
    alice.post("/labels", data={**form, "verdict": "reject", "reason_code": "wrong_point",
                                "comment": "ALICE-NOTE: misses the button"})
    blind = bob.get(url).text
    after_form = blind.split('data-testid="label-form"')[1].split("</form>")[1]
    assert "ALICE-NOTE" not in blind and "wrong_point" not in after_form
    assert 'data-testid="blind"' in blind and "1 label by others stays hidden" in blind
    bob.post("/labels", data={**page_form(blind), "verdict": "accept"})
    seen = bob.get(url).text  # still blind after labelling: the old "reveal after my verdict" let bob re-label
    assert "ALICE-NOTE" not in seen and "wrong_point" not in seen.split('data-testid="label-form"')[1].split(
        "</form>")[1]
    assert 'data-testid="blind"' in seen and 'data-testid="final"' in seen
    # Filtering on reject reasons does not leak either: bob's filter sees only his own rejects.
    assert "queue-done" in bob.get("/queue/lowest_score/next?pos=0&reason=wrong_point").text
    # The adjudicator sees everything.
    carol, _ = login(app, "carol")
    assert "ALICE-NOTE: misses the button" in carol.get(url).text


def test_undo_and_relabel_cannot_reveal_or_rewrite_a_blind_overlap_verdict(env):
    app, engine, ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    ref, other = sorted((r for r in ds.refs.values() if r.train_target and not r.negative), key=lambda r: r.id)[:2]
    url = f"/samples/{quote(ref.id, safe='')}"
    first = alice.post("/labels", data={**page_form(alice.get(url).text), "verdict": "accept"},
                       follow_redirects=False)
    undo_id = parse_qs(urlsplit(first.headers["location"]).query)["undo"][0]
    bob.post("/labels", data={**page_form(bob.get(url).text), "verdict": "reject", "reason_code": "wrong_point"})
    # Alice's label now stands beside bob's: her undo offer is gone and an undo or re-label is refused.
    page = alice.get(f"{url}?undo={undo_id}").text
    assert 'data-testid="undo"' not in page and 'data-testid="final"' in page and "wrong_point" not in \
        page.split('data-testid="label-form"')[1].split("</form>")[1]
    csrf = page_form(page)["csrf_token"]
    assert alice.post("/labels/undo", data={"csrf_token": csrf, "label_id": undo_id}).status_code == 409
    relabel = alice.post("/labels", data={**page_form(page), "verdict": "reject", "reason_code": "wrong_point"})
    assert relabel.status_code == 409
    bob_page = bob.get(url).text
    assert bob.post("/labels", data={**page_form(bob_page), "verdict": "accept"}).status_code == 409
    # A label written around the web app (a script) after both stood changes no outcome either.
    with Session(engine) as db:
        add_label(db, annotator_id=1, sample_id=ref.id, content_hash=ref.content_hash, verdict="reject",
                  reason_code="wrong_point")
    from review.labels import current_verdicts

    standing = current_verdicts(labels(engine))[(ref.id, ref.content_hash)]
    assert {who: lab.verdict for who, lab in standing.items()} == {"alice": "accept", "bob": "reject"}
    # Agreement is on those first verdicts: the dispute is open until an adjudicator rules.
    carol, _ = login(app, "carol")
    stats = carol.get("/stats").text
    assert 'data-testid="open-disputes">1 open' in stats
    assert re.search(r"<td>alice · bob</td><td>1</td><td>0%</td>", stats), stats
    # Before anyone else labels, undo is still mine to use (nothing of others' exists to be seen).
    url2 = f"/samples/{quote(other.id, safe='')}"
    r = bob.post("/labels", data={**page_form(bob.get(url2).text), "verdict": "accept"}, follow_redirects=False)
    lid = parse_qs(urlsplit(r.headers["location"]).query)["undo"][0]
    assert bob.post("/labels/undo", data={"csrf_token": csrf_of(bob), "label_id": lid},
                    follow_redirects=False).status_code == 303


def csrf_of(client) -> str:
    return CSRF_RE.search(client.get("/queue").text).group(1)


def test_team_statistics_are_for_adjudicators_only(env):
    app, _engine, ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    ref = first_of(ds, "click")
    url = f"/samples/{quote(ref.id, safe='')}"
    alice.post("/labels", data={**page_form(alice.get(url).text), "verdict": "accept"})
    bob.post("/labels", data={**page_form(bob.get(url).text), "verdict": "reject", "reason_code": "wrong_point"})
    mine = alice.get("/stats").text
    assert 'data-testid="team-hidden"' in mine and "<td>bob</td>" not in mine
    assert 'data-testid="agreement"' not in mine and 'data-testid="open-disputes"' not in mine
    assert re.search(r"<tr><td>alice</td><td>1</td>", mine)
    carol, _ = login(app, "carol")
    team = carol.get("/stats").text
    assert "<td>bob</td>" in team and 'data-testid="agreement"' in team


def test_leases_keep_two_annotators_off_one_sample_until_they_expire(env):
    app, engine, _ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    a = alice.get("/queue/stratified/next?pos=0&app=demo-settings", follow_redirects=False).headers["location"]
    b = bob.get("/queue/stratified/next?pos=0&app=demo-settings", follow_redirects=False).headers["location"]
    sid_a = unquote(urlsplit(a).path.split("/samples/")[1])
    sid_b = unquote(urlsplit(b).path.split("/samples/")[1])
    assert sid_a != sid_b  # alice holds her sample, so bob's queue skips it
    assert "Also open for alice" in bob.get(f"/samples/{quote(sid_a, safe='')}").text
    with Session(engine) as db:  # alice walks away; her lease runs out
        db.execute(update(Lease).values(expires_at=utcnow() - timedelta(seconds=1)))
        db.commit()
    carol, _ = login(app, "carol")
    c = carol.get("/queue/stratified/next?pos=0&app=demo-settings", follow_redirects=False).headers["location"]
    assert unquote(urlsplit(c).path.split("/samples/")[1]) == sid_a


def test_filters_narrow_queues_and_browse(env):
    app, _, ds = env
    client, _ = login(app, "alice")
    seen = set()
    pos = 0
    while True:
        r = client.get(f"/queue/random/next?pos={pos}&app=demo-settings&action=swipe", follow_redirects=False)
        if r.status_code != 303:
            assert "queue-done" in r.text
            break
        q = parse_qs(urlsplit(r.headers["location"]).query)
        sid = unquote(urlsplit(r.headers["location"]).path.split("/samples/")[1])
        seen.add(sid)
        pos = int(q["pos"][0]) + 1
        form = page_form(client.get(r.headers["location"]).text)
        client.post("/labels", data={**form, "verdict": "accept"})
    expected = {r.id for r in ds.refs.values() if r.app_id == "demo-settings" and r.action_type == "swipe"}
    assert seen == expected and expected
    some = sorted(ds.refs)[3]
    browse = client.get(f"/browse?q={quote(some[-8:])}").text
    assert browse.count('data-testid="browse-row"') == 1 and some in browse
    rejects = client.get("/browse?source=rejects&reason=bbox_check:point_outside_bbox").text
    assert rejects.count('data-testid="browse-row"') == 1
    recovery = client.get("/browse?flag=recovery").text
    assert recovery.count('data-testid="browse-row"') == 1
    (mistake,) = [r for r in ds.refs.values() if not r.train_target]
    page = client.get(f"/samples/{quote(mistake.id, safe='')}").text
    assert 'data-testid="flag-recovery"' in page
    noisy = next(r for r in ds.refs.values() if r.negative)
    assert 'data-testid="flag-negative"' in client.get(f"/samples/{quote(noisy.id, safe='')}").text


def test_done_is_keyed_by_content_hash(env):
    app, engine, ds = env
    client, _ = login(app, "alice")
    ref = sorted(ds.refs.values(), key=lambda r: r.id)[0]
    with Session(engine) as db:  # a label on an older version of this record
        add_label(db, annotator_id=1, sample_id=ref.id, content_hash="0" * 64, verdict="accept")
    page = client.get("/queue").text
    assert "you labelled 0." in page
    assert 'data-testid="my-verdict"' not in client.get(f"/samples/{quote(ref.id, safe='')}").text
    ids = set()
    pos = 0
    while (r := client.get(f"/queue/lowest_score/next?pos={pos}", follow_redirects=False)).status_code == 303:
        ids.add(unquote(urlsplit(r.headers["location"]).path.split("/samples/")[1]))
        got = int(parse_qs(urlsplit(r.headers["location"]).query)["pos"][0])
        if got < pos:
            break  # wrapped around: every unlabelled sample was offered once
        pos = got + 1
    assert ref.id in ids  # still offered: the label judged different content


def test_kappa_counts_reject_reasons_and_adjudication_settles_disputes(env):
    app, engine, ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    refs = sorted(ds.refs.values(), key=lambda r: r.id)[:4]
    for i, ref in enumerate(refs):
        url = f"/samples/{quote(ref.id, safe='')}"
        if i < 2:
            a = {"verdict": "reject", "reason_code": "wrong_point"}
            b = {"verdict": "reject", "reason_code": "wrong_point" if i == 0 else "instruction_mismatch"}
        else:
            a = b = {"verdict": "accept"}
        alice.post("/labels", data={**page_form(alice.get(url).text), **a})
        bob.post("/labels", data={**page_form(bob.get(url).text), **b})
    stats = login(app, "carol")[0].get("/stats").text
    kappa = re.search(r'data-testid="kappa">([^<]+)<', stats).group(1)
    coarse = re.search(r'data-testid="kappa-verdict">([^<]+)<', stats).group(1)
    assert coarse == "1.00" and float(kappa) < 1.0  # same verdicts, but they disagree on what is wrong
    assert 'data-testid="open-disputes">1 open' in stats
    assert "Adjudicate" not in alice.get("/queue").text and alice.get("/adjudicate").status_code == 403
    carol, _ = login(app, "carol")
    listing = carol.get("/adjudicate").text
    assert listing.count('data-testid="dispute"') == 1 and refs[1].id in listing
    page = carol.get(f"/adjudicate/sample/{quote(refs[1].id, safe='')}").text
    assert "wrong_point" in page and "instruction_mismatch" in page  # the adjudicator sees every verdict
    adopt = re.search(r'value="(adopt:\d+)" aria-label="adopt bob"', page).group(1)
    token = CSRF_RE.search(page).group(1)
    r = carol.post("/adjudicate", data={"csrf_token": token, "sample_id": refs[1].id,
                                        "content_hash": refs[1].content_hash, "choice": adopt}, follow_redirects=False)
    assert r.status_code == 303
    ruling = labels(engine)[-1]
    assert (ruling.annotator, ruling.adjudication, ruling.verdict, ruling.reason_code) == (
        "carol", True, "reject", "instruction_mismatch")
    assert 'data-testid="open-disputes">0 open' in carol.get("/stats").text



def test_an_ended_session_keeps_the_edit_through_a_new_login(env):
    from review.auth import end_sessions

    app, engine, ds = env
    alice, _ = login(app, "alice")
    ref = first_of(ds, "click")
    form = page_form(alice.get(f"/samples/{quote(ref.id, safe='')}").text)
    form.update(instruction="Words typed before the session ended", verdict="accept")
    with Session(engine) as db:
        end_sessions(db, "alice")  # the session ends while alice is typing (expiry, an admin, a restart …)
    r = alice.post("/labels", data=form, follow_redirects=False)
    assert r.status_code == 401 and 'data-testid="session-ended"' in r.text and labels(engine) == []
    kept = unescape(re.search(r'name="kept" value="([^"]*)"', r.text).group(1))
    token = CSRF_RE.search(r.text).group(1)
    back = alice.post("/login", data={"username": "alice", "password": "alice-password", "csrf_token": token,
                                      "next": "/queue", "kept": kept}, follow_redirects=False)
    assert back.status_code == 200 and 'data-testid="form-error"' in back.text
    restored = page_form(back.text)
    assert restored["instruction"] == "Words typed before the session ended" and labels(engine) == []
    # Pressing Accept on the restored page saves it under the new session.
    assert alice.post("/labels", data={**restored, "verdict": "accept"}, follow_redirects=False).status_code == 303
    assert [(lab.verdict, lab.instruction) for lab in labels(engine)] == [
        ("edit", "Words typed before the session ended")]


def test_the_adjudication_page_draws_each_edited_action(env):
    app, _engine, ds = env
    alice, _ = login(app, "alice")
    bob, _ = login(app, "bob")
    ref = first_of(ds, "click")
    url = f"/samples/{quote(ref.id, safe='')}"
    form = page_form(alice.get(url).text)
    form.update(a_x="150", a_y="120", verdict="accept")  # still inside the target box
    alice.post("/labels", data=form)
    bob.post("/labels", data={**page_form(bob.get(url).text), "verdict": "accept"})
    carol, _ = login(app, "carol")
    page = carol.get(f"/adjudicate/sample/{quote(ref.id, safe='')}").text
    drawn = page.split('data-layer="alice"')[1].split("</g>")[0]  # alice's layer on the one screenshot
    assert 'cx="150.0"' in drawn and 'cy="120.0"' in drawn
    assert 'data-layer="bob"' not in page  # bob edited nothing: nothing of his is drawn
