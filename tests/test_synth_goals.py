"""Goal-first planning on the hand-built notes graph: which goals, which shortest plans, what is never used.

Each property here is one the synthesis issue asks for and each test fails when it is switched off: plans are
the shortest navigation to their goal and end with a terminal step; a detour whose shortcut is in the graph is
never chosen, and one whose shortcut was never tried is flagged; crawl-made data (a note the crawler created,
a language it switched) is never needed by a task; a form task repeats exactly what the crawler typed.
"""

from __future__ import annotations

from datetime import timedelta

from test_synth_toygraph import T0, click, make_observation, notes_graph, notes_records

from graph.reader import build_graph
from pipelines.synthesis.goals import plan_goals
from pipelines.synthesis.navigation import Navigator, Pollution
from pipelines.synthesis.plan_parts import StepRole
from schemas import Action, ActionType, BBox, Element, GoalKind, Transition


def _plans(graph):
    return {(p.kind, p.facts.target): p for p in plan_goals(graph)}


def test_goals_of_every_kind_with_shortest_plans_that_end_in_a_terminal_step():
    plans = _plans(notes_graph())
    assert set(plans) == {("screen", "New note"), ("screen", "Settings"), ("item", "Groceries"),
                          ("answer", "Groceries"), ("screen", "About this app"), ("create", "New note")}
    for p in plans.values():
        last = p.steps[-1]
        assert last.role in (StepRole.FINISH, StepRole.ANSWER) and last.edge_id is None
        assert ActionType(last.action.type) in (ActionType.DONE, ActionType.ANSWER)
        assert all(s.edge_id for s in p.steps[:-1])
        assert p.goal.observation_id == last.observation_id  # the terminal step is shown on the goal screen
    assert plans[("screen", "Settings")].edge_ids == ("e05",)  # one tap, never via About or the notes list
    answer = plans[("answer", "Groceries")]
    assert answer.goal.kind == GoalKind.ANSWER and answer.steps[-1].action.text.startswith("Milk, eggs")
    create = plans[("create", "New note")]
    assert [s.role for s in create.steps] == ["navigate", "fill", "commit", "finish"]
    assert create.facts.fields == [("Title", "Weekend plans")] and create.goal.must_show == ["Weekend plans"]
    # The login form (a commit after the crawl logged out) is not reachable by navigation: no task needs it.
    assert not any(e in p.edge_ids for p in plans.values() for e in ("e01", "e02", "e03"))


def test_a_detour_is_flagged_until_its_shortcut_is_probed_and_then_never_chosen():
    about = _plans(notes_graph())[("screen", "About this app")]
    assert about.edge_ids == ("e05", "e14")  # through Settings: the footer "About" link was never tried
    assert [(r.label, r.expected_state) for r in about.unprobed] == [("About", "about")]
    # A probe tries the footer link and records where it went: the plan becomes the one-tap shortcut.
    obs, transitions = notes_records()
    probed = Transition(id="probe-1", run_id="probe", app_id="notes", from_state="notes", to_state="about",
                        from_observation_id=next(o.id for o in obs if o.location.endswith("/notes")),
                        to_observation_id=next(o.id for o in obs if o.location.endswith("/about")),
                        action=click("notes", "about-foot"), effective=True, timestamp=T0 + timedelta(hours=1))
    shortcut = _plans(build_graph("notes", obs, [*transitions, probed]))[("screen", "About this app")]
    assert shortcut.edge_ids == ("probe-1",) and shortcut.unprobed == []


def test_crawl_made_data_is_never_needed_by_a_fresh_start_task():
    # Later in the crawl the list shows the note the crawler created ("Weekend plans"), on a second capture of
    # the notes screen, and the crawler opened it from there.
    obs, transitions = notes_records()
    made = Element(id="note-3", role="link", text="Weekend plans", resource_id="note-link",
                   bbox=BBox(x1=20, y1=190, x2=380, y2=220), clickable=True)
    later = make_observation("notes", None, extra=[made], variant="-later")
    note_obs = next(o for o in obs if o.location.endswith("/notes/3"))
    opened = Transition(id="e20", run_id="run-1", app_id="notes", from_state="notes", to_state="note",
                        from_observation_id=later.id, to_observation_id=note_obs.id,
                        action=click("notes", "note-1").model_copy(update={"target_element_id": "note-3",
                                                                           "target_bbox": made.bbox}),
                        effective=True, timestamp=T0 + timedelta(hours=2))
    g = build_graph("notes", [*obs, later], [*transitions, opened])
    nav = Navigator(g)
    assert nav.pollution.typed >= {"Weekend plans"}
    assert not nav.pollution.clean(later) and nav.clean_capture("notes").id != later.id
    assert nav.anchored(opened) is None  # its target exists only on the polluted capture
    plans = _plans(g)
    assert ("item", "Weekend plans") not in plans  # no "open the note the crawler made"
    assert "e20" not in {e for p in plans.values() for e in p.edge_ids}
    assert Pollution({"Weekend plans"}).contains_typed("Note “Weekend plans” saved")


def test_a_search_term_the_app_showed_before_it_was_typed_is_the_apps_text_not_crawl_made_data():
    """The crawler types into a search box a word the page shows ("Deploy" on Node-RED, "Contributing" on docsify).
    Counted as crawl-made text, it made every screen showing that button or link polluted: 111 of a Node-RED
    crawl's 131 states, and no task at all. A value shown before its first typing is the app's own."""
    search = Element(id="search", role="textbox", text="Search notes", resource_id="note-search",
                     bbox=BBox(x1=160, y1=60, x2=280, y2=90), clickable=True, editable=True)
    obs, transitions = notes_records(extra={"notes": [search]})
    notes = next(o for o in obs if o.location.endswith("/notes"))
    searched = Transition(id="e30", run_id="run-1", app_id="notes", from_state="notes", to_state="notes",
                          from_observation_id=notes.id, to_observation_id=notes.id,
                          action=click("notes", "new").model_copy(update={
                              "type": ActionType.TYPE, "text": "groceries", "target_element_id": "search",
                              "target_bbox": search.bbox}),
                          effective=False, timestamp=T0 + timedelta(hours=1))
    g = build_graph("notes", obs, [*transitions, searched])
    nav = Navigator(g)
    assert "groceries" not in nav.pollution.typed and "Weekend plans" in nav.pollution.typed
    assert nav.clean_capture("notes") is not None  # the entry still has a clean capture: tasks start there
    assert ("item", "Groceries") in _plans(g)
    # The note title it typed (shown only after the save, on the note it made) stays crawl-made.
    assert not nav.pollution.clean(next(o for o in obs if o.location.endswith("/notes/3")))


def test_a_goal_reached_only_through_a_commit_is_not_a_screen_goal():
    # The only way to "About" is a submit on a form: a screen goal must not silently depend on it. (The same
    # label on a screen without a form only opens something and is navigation: see is_commit.)
    obs, transitions = notes_records()
    renamed = [t for t in transitions if t.id != "e14"]
    save_like = next(t for t in transitions if t.id == "e14")
    settings = next(o for o in obs if o.location.endswith("/settings"))
    relabelled = settings.model_copy(update={"elements": [
        e.model_copy(update={"text": "Save and continue"}) if e.id == "about-link"
        else e.model_copy(update={"editable": True}) if e.id == "theme" else e for e in settings.elements]})
    obs = [relabelled if o.id == settings.id else o for o in obs]
    g = build_graph("notes", obs, [*renamed, save_like])
    assert ("screen", "About this app") not in _plans(g)


def test_a_form_task_repeats_exactly_what_the_crawler_typed_before_the_submit():
    obs, transitions = notes_records()
    # The crawler typed a second, different title before saving: the task uses the last value only, once.
    again = next(t for t in transitions if t.id == "e07").model_copy(update={
        "id": "e07b", "timestamp": T0 + timedelta(seconds=1, milliseconds=500),
        "action": next(t for t in transitions if t.id == "e07").action.model_copy(update={"text": "Weekend plans"})})
    g = build_graph("notes", obs, [*transitions, again])
    create = _plans(g)[("create", "New note")]
    assert [s.role for s in create.steps].count("fill") == 1
    # A session broken by a restart (the save's capture is not where the typing left off) makes no task.
    broken = [t.model_copy(update={"from_observation_id": "elsewhere"}) if t.id == "e08" else t for t in transitions]
    g2 = build_graph("notes", [*obs, obs[0].model_copy(update={"id": "elsewhere"})], broken)
    assert ("create", "New note") not in _plans(g2)


def test_a_box_the_form_came_with_ticked_is_unticked_in_the_task_never_selected():
    """I Hate Money's "Enable project history" is ticked on the settings form; the crawler's tap cleared it, and
    the task said "… and select Enable project history" — the opposite of what the trajectory does."""
    from pipelines.synthesis.backends.offline import OfflineBackend
    from pipelines.synthesis.prompts import load_prompts
    from pipelines.synthesis.runner import plan_step_calls

    for ticked in (True, False):
        box = Element(id="pin", role="checkbox", text="Pinned", checked=ticked, checkable=True, clickable=True,
                      bbox=BBox(x1=20, y1=100, x2=140, y2=130))
        obs, transitions = notes_records(extra={"form": [box]})
        form = next(o for o in obs if o.location.endswith("/notes/new"))
        tap = Transition(id="e07c", run_id="run-1", app_id="notes", from_state="form", to_state="form",
                         from_observation_id=form.id, to_observation_id=form.id, effective=False,
                         timestamp=T0 + timedelta(seconds=1, milliseconds=500),
                         action=Action(type="click", x=80, y=115, image_width=form.width, image_height=form.height,
                                       target_element_id="pin", target_bbox=box.bbox))
        g = build_graph("notes", obs, [*transitions, tap])
        create = _plans(g)[("create", "New note")]
        assert create.facts.choices == [("", "Pinned")] and create.facts.toggles == {"Pinned": not ticked}
        backend = OfflineBackend(load_prompts())
        phrase = backend.goal_phrase("en", {"kind": create.kind, **create.facts.as_payload()})
        assert ("untick “Pinned”" in phrase) == ticked and ("tick “Pinned”" in phrase) and "select" not in phrase, \
            phrase
        calls = plan_step_calls(g, [create], {create.plan_id: ("Create a note.", 0)}, "en")
        choose = next(c for c in calls.values() if c.payload["role"] == "choose")
        think = backend.reasoning(choose.payload, "")
        assert ("untick" in think or "cleared" in think) == ticked, think


def _with_paths(obs, paths):
    """``obs`` with DOM paths set on the elements named in ``paths`` (id -> path)."""
    return obs.model_copy(update={"elements": [e.model_copy(update={"path": paths.get(e.id, e.path)})
                                               for e in obs.elements]})


def _card_graph(groceries_body: bool = True, header_text: str = "", recipes_card: bool = True,
                row_text: str = ""):
    """The toy app as a single-page app: opening Groceries shows its card above an older, longer "Recipes"
    card; the notes list has one row per note (and, optionally, a header paragraph outside every row)."""
    recipes = [Element(id="r-h", role="heading", text="Recipes", bbox=BBox(x1=10, y1=200, x2=200, y2=230),
                       path="body[1]/main[1]/section[2]/h2[1]"),
               Element(id="r-body", role="paragraph", bbox=BBox(x1=20, y1=240, x2=380, y2=270),
                       text="Pancakes need flour, eggs, milk, butter, sugar and a pinch of salt for the batter",
                       path="body[1]/main[1]/section[2]/p[1]")]
    header = [Element(id="hdr", role="paragraph", text=header_text, bbox=BBox(x1=20, y1=40, x2=380, y2=55),
                      path="body[1]/header[1]/p[1]")] if header_text else []
    if row_text:
        header.append(Element(id="row-1", role="paragraph", text=row_text, bbox=BBox(x1=20, y1=141, x2=380, y2=149),
                              path="body[1]/main[1]/ul[1]/li[1]/p[1]"))
    obs, transitions = notes_records(extra={"groceries": recipes if recipes_card else [], "notes": header})
    out = []
    for o in obs:
        if o.location.endswith("/notes/1"):
            o = _with_paths(o, {"groceries-h1": "body[1]/main[1]/section[1]/h2[1]",
                                "g-body": "body[1]/main[1]/section[1]/p[1]"})
            if not groceries_body:
                o = o.model_copy(update={"elements": [e for e in o.elements if e.id != "g-body"]})
        if o.location.endswith("/notes"):
            o = _with_paths(o, {"note-1": "body[1]/main[1]/ul[1]/li[1]/a[1]",
                                "note-2": "body[1]/main[1]/ul[1]/li[2]/a[1]"})
        out.append(o)
    return build_graph("notes", out, transitions)


def test_an_answer_is_read_from_the_items_own_card_never_a_neighbour_shown_beside_it():
    answer = _plans(_card_graph())[("answer", "Groceries")]
    assert answer.goal.answer.startswith("Milk, eggs") and answer.steps[-1].action.text.startswith("Milk, eggs")
    # The item's card has no text of its own: no question about it, rather than the neighbour's text as answer.
    plans = _plans(_card_graph(groceries_body=False))
    assert ("item", "Groceries") in plans and ("answer", "Groceries") not in plans


def test_an_answer_counts_as_shown_on_the_list_only_inside_the_items_own_row():
    from test_synth_toygraph import GROCERIES_TEXT

    # The same words in the page header, outside the Groceries row: the task still opens the note.
    answer = _plans(_card_graph(header_text=GROCERIES_TEXT, recipes_card=False))[("answer", "Groceries")]
    assert not answer.facts.answer_on_list and answer.edge_ids == ("e12",)
    assert answer.goal.location.endswith("/notes/1")
    # The Groceries row itself shows the whole text: the question is answered from the list, without a tap — and
    # the list is the start screen, so the question needs no navigation at all and is not asked (issue 46).
    from pipelines.synthesis.goals import Planner

    planner = Planner(_card_graph(row_text=GROCERIES_TEXT, recipes_card=False))
    assert ("answer", "Groceries") not in {(p.kind, p.facts.target) for p in planner.plans()}
    [listed] = [p for p, why, _ in planner.refused if why == "answer_on_start"]
    assert listed.facts.answer_on_list and listed.edge_ids == () and listed.goal.location.endswith("/notes")


def test_a_route_through_screens_a_later_control_was_already_on_is_refused_as_a_detour():
    from pipelines.synthesis.goals import Planner
    from pipelines.synthesis.runner import SynthConfig, select_plans

    # Settings' own "About" control is also on the notes screen (a wiki's sidebar shows the same controls
    # everywhere); the recorded route still goes through Settings, because pressing it on the notes screen was
    # never recorded reaching the About screen.
    same = Element(id="side-about", role="link", text="About", resource_id="settings-about",
                   bbox=BBox(x1=20, y1=230, x2=140, y2=250), clickable=True)
    planner = Planner(notes_graph(extra={"notes": [same]}))
    plans = {(p.kind, p.facts.target) for p in planner.plans()}
    assert ("screen", "About this app") not in plans and ("screen", "Settings") in plans
    [(refused, reason, detail)] = [r for r in planner.refused if r[0].facts.target == "About this app"]
    assert reason == "detour_plan" and refused.edge_ids == ("e05", "e14") and "step 2" in detail
    # Its shortcut (that very control, never tried on the notes screen) is still asked of the prober.
    from pipelines.synthesis.probe import plan_probes, probe_plans

    graph = notes_graph(extra={"notes": [same]})
    assert ("side-about", "about") in {(r.element_id, r.expected_state) for r in refused.unprobed}
    assert ("notes", "side-about", "shortcut") in {(p.state, p.element_id, p.why)
                                                    for p in plan_probes(graph, probe_plans(graph))}
    _, rejects = select_plans(notes_graph(extra={"notes": [same]}), SynthConfig())
    assert [(r.stage, r.reason) for r in rejects] == [("synthesis.plan", "detour_plan")]
    assert "About this app" in rejects[0].detail and "Settings" in rejects[0].payload
    # Hidden until a menu opens (a phone's drawer): not on screen, so the route is no detour.
    hidden = same.model_copy(update={"visible": False})
    assert ("screen", "About this app") in {(p.kind, p.facts.target) for p in plan_goals(
        notes_graph(extra={"notes": [hidden]}))}


def test_a_goal_is_the_capture_its_own_tap_reached_when_a_state_merges_different_items():
    from test_synth_toygraph import GROCERIES_TEXT

    # The app's item pages share one structure, so the crawl's state for "a note page" holds two captures: the
    # Groceries note (seen first) and, reached later by tapping "Trip to Kyoto", that note.
    obs, transitions = notes_records()
    kyoto = make_observation("groceries", None, variant="-kyoto")
    kyoto = kyoto.model_copy(update={"elements": [
        e.model_copy(update={"text": "Trip to Kyoto"}) if e.role == "heading" else
        e.model_copy(update={"text": "Book the ryokan and visit Fushimi Inari early"}) if e.id == "g-body" else e
        for e in kyoto.elements]})
    notes = next(o for o in obs if o.location.endswith("/notes"))
    tap = Transition(id="e00", run_id="run-1", app_id="notes", from_state="notes", to_state="groceries",
                     from_observation_id=notes.id, to_observation_id=kyoto.id, action=click("notes", "note-2"),
                     effective=True, timestamp=T0 + timedelta(hours=1))
    plans = _plans(build_graph("notes", [*obs, kyoto], [*transitions, tap]))
    answer = plans[("answer", "Trip to Kyoto")]
    assert answer.edge_ids == ("e00",) and answer.goal.observation_id == kyoto.id
    assert answer.goal.answer == "Book the ryokan and visit Fushimi Inari early" != GROCERIES_TEXT
    assert plans[("item", "Trip to Kyoto")].goal.observation_id == kyoto.id


def test_a_tap_on_one_of_several_look_alike_controls_is_refused_as_ambiguous():
    from pipelines.synthesis.goals import Planner

    # Two visible "Settings" links with one identity (every row's "edit" link, in a real app): nothing in a task
    # could say which one, so no task is built on either.
    twin = Element(id="settings-2", role="link", text="Settings", resource_id="nav-settings",
                   bbox=BBox(x1=300, y1=230, x2=380, y2=250), clickable=True)
    planner = Planner(notes_graph(extra={"notes": [twin]}))
    assert ("screen", "Settings") not in {(p.kind, p.facts.target) for p in planner.plans()}
    reasons = {(r[0].facts.target, r[1]) for r in planner.refused}
    assert ("Settings", "ambiguous_target") in reasons
    # Hidden (a collapsed menu's copy): one control on screen, the plan stands.
    hidden = twin.model_copy(update={"visible": False})
    kept = plan_goals(notes_graph(extra={"notes": [hidden]}))
    assert ("screen", "Settings") in {(p.kind, p.facts.target) for p in kept}


def test_a_form_page_without_a_heading_is_named_by_its_fieldset_caption() -> None:
    from pipelines.synthesis.screens import heading

    obs = make_observation("form", None)
    caption = Element(id="cap", role="legend", text="Add a bill", bbox=BBox(x1=10, y1=60, x2=200, y2=80))
    named = obs.model_copy(update={"elements": [*obs.elements, caption]})
    assert heading(named) != "Add a bill"  # a real heading wins
    bare = obs.model_copy(update={"elements": [e for e in named.elements if e.role != "heading"]})
    assert heading(bare) == "Add a bill"


def test_an_unnamed_dialog_is_called_by_what_it_shows_never_by_an_id_written_for_code() -> None:
    from pipelines.synthesis.screens import heading

    # A UI library's popover: role dialog, no heading, no accessible name, only a generated id. Tasks read
    # "Bring up the “radix-:r9:” panel" when that id named it.
    obs = make_observation("form", None)
    box = BBox(x1=300, y1=200, x2=500, y2=260)
    popup = Element(id="pop", role="dialog", resource_id="radix-:r9:", bbox=box, path="body[1]/div[4]")
    close = Element(id="pop-x", role="button", text="Close", clickable=True, path="body[1]/div[4]/button[1]",
                    bbox=BBox(x1=300, y1=200, x2=340, y2=215))
    key = Element(id="pop-k", role="text", text="team", path="body[1]/div[4]/span[1]",
                  bbox=BBox(x1=310, y1=220, x2=360, y2=235))
    value = Element(id="pop-v", role="text", text="data-science", path="body[1]/div[4]/span[2]",
                    bbox=BBox(x1=310, y1=240, x2=420, y2=255))
    shown = obs.model_copy(update={"elements": [*obs.elements, popup, close, value, key]})
    assert heading(shown) == "team"  # its topmost text, not the button above it, not the id
    bare = shown.model_copy(update={"elements": [*obs.elements, popup]})
    assert "radix" not in heading(bare)  # nothing inside: the page's own heading, never the id
    # An accessible name still wins.
    labelled = popup.model_copy(update={"content_desc": "Tag details"})
    assert heading(shown.model_copy(update={"elements": [*obs.elements, labelled, key]})) == "Tag details"


def test_a_link_the_app_shows_on_every_screen_opens_a_screen_not_a_list_entry():
    """A navigation bar is a row of links, a list by its structure; when the same links show at three or more
    places, the tap opens the app's screen ("Groceries"), not "the entry “Groceries”", and the answer question
    about an entry of a list is not asked of it."""
    def bar(state: str) -> list[Element]:
        return [Element(id=f"{state}-bar-{i}", role="link", text=label, resource_id="note-link", clickable=True,
                        bbox=BBox(x1=20 + 120 * i, y1=200, x2=130 + 120 * i, y2=220))
                for i, label in enumerate(("Groceries", "Trip to Kyoto"))]

    listed = _plans(notes_graph())
    assert ("item", "Groceries") in listed and ("answer", "Groceries") in listed
    plans = _plans(notes_graph(extra={s: bar(s) for s in ("settings", "about", "form")}))
    assert ("item", "Groceries") not in plans and ("answer", "Groceries") not in plans
    screen = plans[("screen", "Groceries")]
    assert screen.facts.item == "" and screen.edge_ids == ("e12",)


def test_an_answer_quotes_whole_sentences_never_a_text_cut_where_the_capture_stopped():
    from pipelines.synthesis.plan_parts import MAX_ANSWER_CHARS, answer_span

    assert answer_span("Milk, eggs, bread and a bag of coffee beans") == "Milk, eggs, bread and a bag of coffee beans"
    cut = ("Trac is distributed under the modified BSD License. The complete text of the license can be found in "
           "the COPYING file of the distribution")[:120]
    assert len(cut) == 120 and answer_span(cut) == "Trac is distributed under the modified BSD License."
    prose = "The wiki keeps every page's history. " * 12
    span = answer_span(prose)
    assert len(span) <= MAX_ANSWER_CHARS and span.endswith("history.") and prose.startswith(span)
    assert answer_span("x" * 120) == ""  # cut, and no whole sentence in it: no answer at all


def test_the_links_of_a_paragraph_are_its_words_not_the_entries_of_a_list():
    from pipelines.synthesis.screens import siblings

    def link(eid: str, text: str, path: str) -> Element:
        return Element(id=eid, role="link", text=text, path=path, clickable=True, bbox=BBox(x1=0, y1=0, x2=50, y2=20))

    rows = [link(f"r{i}", t, f"body[1]/div[1]/ul[1]/li[{i}]/a[1]") for i, t in enumerate(("WikiHtml", "CamelCase",
                                                                                           "WikiMacros"), 1)]
    prose = [link(f"p{i}", t, f"body[1]/div[1]/p[2]/a[{i}]") for i, t in enumerate(("new", "diff", "TracQuery"), 1)]
    obs = make_observation("notes", None).model_copy(update={"elements": rows + prose})
    assert [e.text for e in siblings(obs, rows[0])] == ["CamelCase", "WikiMacros"]
    assert siblings(obs, prose[0]) == []


def test_an_id_written_for_code_is_no_name_a_person_could_quote():
    from pipelines.synthesis.screens import spoken_label

    def el(**kw: str) -> Element:
        return Element(id="x", role="link", bbox=BBox(x1=0, y1=0, x2=9, y2=9), **kw)

    assert spoken_label(el(text="Timeline", resource_id="nav-timeline")) == "Timeline"
    assert spoken_label(el(content_desc="Open menu", resource_id="btn_menu")) == "Open menu"
    assert spoken_label(el(resource_id="logo")) == "logo"  # a plain word reads as one
    for machine in ("red-ui-header-button-sidemenu", "btn_save", "navBar", "item42"):
        assert spoken_label(el(resource_id=machine)) == "", machine
    assert spoken_label(el()) == ""  # only a role: nothing to say


def test_a_tables_sort_headers_and_bare_numbers_are_not_entries_of_it():
    from pipelines.synthesis.screens import siblings

    def link(eid: str, text: str, path: str) -> Element:
        return Element(id=eid, role="link", text=text, path=path, clickable=True, bbox=BBox(x1=0, y1=0, x2=50, y2=20))

    head = [link(f"h{i}", t, f"body[1]/table[1]/thead[1]/tr[1]/th[{i}]/a[1]") for i, t in
            enumerate(("id ▼", "member_id", "returned"), 1)]
    rows = [link(f"c{i}", t, f"body[1]/table[1]/tbody[1]/tr[{i}]/td[2]/a[1]") for i, t in
            enumerate(("Ficciones", "Song of Solomon", "1958"), 1)]
    obs = make_observation("notes", None).model_copy(update={"elements": head + rows})
    assert siblings(obs, head[1]) == []
    assert [e.text for e in siblings(obs, rows[0])] == ["Song of Solomon", "1958"]


def test_an_entry_that_opens_outside_the_lists_pages_is_not_called_by_the_lists_noun(monkeypatch):
    """On "Your notes", "Groceries" opens /notes/1: a note. Were it a link into another table (/books/1, as a
    loans table's book column is), it would open a book, and "the note “Groceries”" would be false."""
    import test_synth_toygraph as toy

    assert _plans(notes_graph())[("item", "Groceries")].facts.noun == "note"
    _loc, head, els = toy.SCREENS["groceries"]
    monkeypatch.setitem(toy.SCREENS, "groceries", ("/books/1", head, els))
    item = _plans(notes_graph())[("item", "Groceries")]
    assert item.facts.noun == "" and item.facts.target == "Groceries"


def test_a_language_switch_is_no_way_to_get_somewhere_and_a_tagline_names_no_screen():
    """I Hate Money's language menu: tapping "Deutsch" renames every screen, so the crawl's next screens were
    "Sprachen", "Ausgabe hinzufügen" — goals an English task cannot name. Its home page's heading is a tagline."""
    from pipelines.synthesis.screens import LANGUAGE_NAME, TAGLINE

    for label in ("Deutsch", "Čeština", "Azərbaycan", "中文 (Chinese)", "English", " Français "):
        assert LANGUAGE_NAME.match(label), label
    for label in ("English recipes", "Settings", "Languages", "Deutsche Bahn"):
        assert not LANGUAGE_NAME.match(label), label
    assert TAGLINE.search("Manage your shared expenses, easily")
    assert not TAGLINE.search("The Trac User and Administration Guide") and not TAGLINE.search("Hello, world")
    # nor does it name the screen a step is on ("The Manage your shared expenses, easily page is open."), and the
    # logo link inside the bar's heading ("#! money?") is the app's name, not the page's
    from pipelines.synthesis.screens import heading, link_name

    home = make_observation("notes", None).model_copy(update={"elements": [
        Element(id="tag", role="heading", text="Manage your shared expenses, easily",
                bbox=BBox(x1=0, y1=0, x2=9, y2=9)),
        Element(id="logo", role="link", text="#! money?", path="body[1]/nav[1]/h1[1]/a[1]", clickable=True,
                bbox=BBox(x1=0, y1=10, x2=9, y2=19)),
        Element(id="bills", role="link", text="Bills", path="body[1]/nav[1]/ul[1]/li[1]/a[1]", clickable=True,
                bbox=BBox(x1=0, y1=20, x2=9, y2=29))]})
    assert heading(home) == ""
    assert link_name(home.element("logo")) == "" and link_name(home.element("bills")) == "Bills"
    # A language link in the toy app's header that (in the crawl) led to About: one tap, shorter than the route
    # through Settings, and without the rule the About plan would take it.
    lang = Element(id="lang-de", role="link", text="Deutsch", resource_id="lang", clickable=True,
                   bbox=BBox(x1=300, y1=260, x2=380, y2=290))
    observations, transitions = notes_records(extra={"notes": [lang]})
    notes = next(o for o in observations if o.location.endswith("/notes"))
    about = next(o for o in observations if o.location.endswith("/about"))
    about_later = about.model_copy(update={"id": "obs-about-after-switch", "timestamp": T0 + timedelta(seconds=99)})
    switch = Transition(id="e16", run_id="run-1", app_id="notes", from_state="notes", to_state="about",
                        from_observation_id=notes.id, to_observation_id=about_later.id, effective=True,
                        action=Action(type="click", x=340, y=275, image_width=400, image_height=300,
                                      target_element_id="lang-de"), timestamp=T0 + timedelta(seconds=99))
    plans = {(p.kind, p.facts.target): p for p in plan_goals(build_graph("notes", [*observations, about_later],
                                                                           [*transitions, switch]))}
    assert plans[("screen", "About this app")].edge_ids == ("e05", "e14")


def test_a_heading_names_its_screen_without_its_inline_controls_or_a_result_count():
    """Captured text includes inline children: datasette's query form heading reads "Custom SQL query returning 8
    rows (hide)", where "hide" is a link inside it; a table's "30 rows sorted by id descending" is the result of
    a sort, not a screen anyone would ask for by that name."""
    from pipelines.synthesis.screens import heading, headings

    def h(eid: str, text: str, path: str, y: int) -> Element:
        return Element(id=eid, role="heading", text=text, path=path, bbox=BBox(x1=10, y1=y, x2=300, y2=y + 20))

    def screen(*els: Element):
        return make_observation("notes", None).model_copy(update={"elements": list(els)})

    form = "body[1]/div[1]/form[1]/h3[1]"
    hide = Element(id="hide", role="link", text="hide", path=form + "/a[1]", clickable=True,
                   bbox=BBox(x1=250, y1=10, x2=280, y2=30))
    assert heading(screen(h("q", "Custom SQL query returning 8 rows (hide)", form, 10), hide)) == "Custom SQL query"
    edit = Element(id="ed", role="link", text="edit", path="body[1]/h2[1]/span[2]/a[1]", clickable=True,
                   bbox=BBox(x1=250, y1=10, x2=280, y2=30))
    assert heading(screen(h("s", "History [edit]", "body[1]/h2[1]", 10), edit)) == "History"
    # the same words outside the heading are left alone, and a heading that is only its control keeps its text
    assert heading(screen(h("s", "History [edit]", "body[1]/h2[1]", 10),
                          edit.model_copy(update={"path": "body[1]/p[1]/a[1]"}))) == "History [edit]"
    alone = Element(id="al", role="link", text="Tables", path="body[1]/h2[1]/a[1]", clickable=True,
                    bbox=BBox(x1=10, y1=10, x2=80, y2=30))
    assert heading(screen(h("t", "Tables", "body[1]/h2[1]", 10), alone)) == "Tables"
    # a file manager's toolbar drawn inside a heading element: every word is a link ("control-panel", "prev",
    # "up", "next"), so it names no folder; a title with links among its words still names its page
    bar = [Element(id=f"b{i}", role="link", text=t, path=f"body[1]/h2[1]/a[{i}]", clickable=True,
                   bbox=BBox(x1=10 + 40 * i, y1=10, x2=40 + 40 * i, y2=30))
           for i, t in enumerate(("control-panel", "prev", "up", "next"), start=1)]
    assert heading(screen(h("tb", "control-panelprev/up/next", "body[1]/h2[1]", 10), *bar)) == ""
    diff = [Element(id=f"v{i}", role="link", text=t, path=f"body[1]/h1[1]/a[{i}]", clickable=True,
                    bbox=BBox(x1=10 + 60 * i, y1=10, x2=60 + 60 * i, y2=30))
            for i, t in enumerate(("Version 3", "Version 4", "WikiStart"), start=1)]
    title = "Changes between Version 3 and Version 4 of WikiStart"
    assert heading(screen(h("d", title, "body[1]/h1[1]", 10), *diff)) == title
    counted = screen(h("c", "30 rows sorted by id descending", "body[1]/h3[1]", 10),
                     h("l", "loans", "body[1]/h1[1]", 50))
    assert heading(counted) == "loans" and headings(counted) == ["loans"]
    assert heading(screen(h("m", "Custom Query (3 matches)", "body[1]/h1[1]", 10))) == "Custom Query"
    assert heading(screen(h("k", "Top 10 items to pack", "body[1]/h1[1]", 10))) == "Top 10 items to pack"
    # a record page's "table: key" title, said as a person would
    assert heading(screen(h("r", "loans: 23", "body[1]/h1[1]", 10))) == "loans row 23"
    assert heading(screen(h("n", "Ticket #3: crash", "body[1]/h1[1]", 10))) == "Ticket #3: crash"
    # an empty list's message names no screen; a title that starts with "No" does
    assert heading(screen(h("e", "No bills", "body[1]/h2[1]", 10))) == ""
    assert heading(screen(h("e2", "No results found.", "body[1]/h2[1]", 10))) == ""
    assert heading(screen(h("b", "No Longer at Ease", "body[1]/h1[1]", 10))) == "No Longer at Ease"
    # a table of contents box first in document order names the box, not the page (Trac's WikiFormatting)
    toc = screen(h("toc", "Table of Contents", "body[1]/div[1]/h4[1]", 10),
                 h("t1", "WikiFormatting", "body[1]/h1[1]", 60))
    assert heading(toc) == "WikiFormatting" and headings(toc) == ["WikiFormatting"]
    # a diff page's title is nine words; the per-file heading under it is not the page's name
    diff = screen(h("d1", "Changes between Version 1 and Version 2 of WikiStart", "body[1]/h1[1]", 10),
                  h("d2", "TabularUnified WikiStart", "body[1]/ul[1]/li[1]/h2[1]", 300))
    assert heading(diff) == "Changes between Version 1 and Version 2 of WikiStart"


def test_a_page_an_image_link_opened_is_never_named_by_the_links_resource_id():
    """Trac's logo is an image link (resource id "logo", no text); it opens the configuration help scrolled to
    a section with no heading in view. "Take me to logo." names nothing a person sees: no goal. The same link with
    words on it is named by them."""
    from pipelines.synthesis.goals import Planner

    planner = Planner(notes_graph())
    before = make_observation("notes", None)
    after = make_observation("about", None).model_copy(
        update={"elements": [e for e in make_observation("about", None).elements if e.role != "heading"]})
    logo = Element(id="logo", role="link", resource_id="logo", clickable=True, bbox=BBox(x1=0, y1=0, x2=40, y2=40))
    assert planner._name(before, after, logo) is None
    assert planner._name(before, after, logo.model_copy(update={"text": "Help"})) == ("Help", "page")
    assert planner._name(before, after, logo.model_copy(update={"content_desc": "Trac home"})) == ("Trac home", "page")


def test_the_links_inside_one_heading_are_its_words_but_card_titles_are_a_list():
    """Trac's ticket heading "#1 new defect" holds three links: they are no list of entries ("Show me
    “defect”" opened a ticket query). Cards whose titles are links in their own headings are one."""
    from pipelines.synthesis.screens import siblings

    def link(eid: str, text: str, path: str) -> Element:
        return Element(id=eid, role="link", text=text, path=path, clickable=True, bbox=BBox(x1=0, y1=0, x2=50, y2=20))

    badges = [link(f"b{i}", t, f"body[1]/div[2]/h2[1]/span[{i}]/a[1]") for i, t in enumerate(("new", "defect"), 1)]
    cards = [link(f"c{i}", t, f"body[1]/ul[1]/li[{i}]/h3[1]/a[1]") for i, t in enumerate(("Groceries", "Kyoto"), 1)]
    obs = make_observation("notes", None).model_copy(update={"elements": badges + cards})
    assert siblings(obs, badges[1]) == []
    assert [e.text for e in siblings(obs, cards[0])] == ["Kyoto"]


def test_a_link_that_only_changes_the_lists_query_filters_it_and_opens_no_entry(monkeypatch):
    """datasette's country column: "Colombia" opens ``/library/authors?country=Colombia``, the same list
    filtered. "Show me the author called “Colombia”" would be false; no item (nor answer) goal is planned."""
    import test_synth_toygraph as toy

    assert ("item", "Groceries") in _plans(notes_graph())
    _loc, head, els = toy.SCREENS["groceries"]
    monkeypatch.setitem(toy.SCREENS, "groceries", ("/notes?tag=groceries", head, els))
    plans = _plans(notes_graph())
    assert ("item", "Groceries") not in plans and ("answer", "Groceries") not in plans


def test_names_in_style_capitals_are_written_as_a_person_types_them_and_timestamps_name_no_entry():
    """Trac's navigation bar is capitalised by CSS ("VIEW TICKETS"), which the capture keeps; its timeline
    entries start with the time the seed was made ("00:43 MeetingNotes created by trac"), which another
    instance of the app does not show — the replay of such an item task failed on every fresh instance."""
    from pipelines.synthesis.screens import TIME_OF_DAY
    from pipelines.synthesis.screens import as_written as _as_written

    assert _as_written("VIEW TICKETS") == "View tickets" and _as_written("SEARCH") == "Search"
    for kept in ("FAQ", "RSS", "Timeline", "iPhone", "ÜBERSICHT", "CamelCase"):
        assert _as_written(kept) == kept, kept
    for stamped in ("00:43 MeetingNotes created by trac", "Standup at 9:30", "Backup 23:59:01 done"):
        assert TIME_OF_DAY.search(stamped), stamped
    for plain in ("Ticket #12", "Psalm 23", "ratio 1:2:3", "2024-11-23", "Chapter 10"):
        assert not TIME_OF_DAY.search(plain), plain
    # Nor is a route through such an entry one a fresh instance offers: Settings is reached by "Preferences".
    observations, transitions = notes_records()
    stamped_link = [o.model_copy(update={"elements": [e.model_copy(update={"text": "09:41 Settings"})
                                                      if e.id == "settings-link" else e for e in o.elements]})
                    if o.location.endswith("/notes") else o for o in observations]
    assert _plans(build_graph("notes", stamped_link, transitions))[("screen", "Settings")].edge_ids == ("e06",)


def test_a_page_opened_at_one_of_its_sections_makes_no_task_but_a_hash_route_does():
    """Trac's logo opens ``/wiki/TracIni#header_logo-section``: the page title is scrolled away and the capture
    holds the "[header_logo]" section, which no task may call a screen ("Show me the [header_logo] screen."). A
    single-page app's hash route (``#/about``) names no element and is a screen of its own."""
    from pipelines.synthesis.goals import Planner

    def about_at(fragment: str, section_id: str) -> list[str]:
        obs, transitions = notes_records()
        moved = []
        for o in obs:
            if o.location.endswith("/about"):
                els = [e.model_copy(update={"resource_id": section_id}) if e.role == "heading" else e
                       for e in o.elements]
                o = o.model_copy(update={"location": f"{o.location}#{fragment}", "elements": els})
            moved.append(o)
        planner = Planner(build_graph("notes", moved, transitions))
        targets = [p.facts.target for p in planner.plans()]
        refused = [reason for _p, reason, _d in planner.refused]
        return [*targets, *(f"refused:{r}" for r in refused)]

    at_section = about_at("credits-section", "credits-section")
    assert "About this app" not in at_section and "refused:section_anchor" in at_section
    routed = about_at("/about", "")
    assert "About this app" in routed and "refused:section_anchor" not in routed


def test_a_long_list_gives_a_few_tasks_spread_over_it_and_the_rest_are_refused_with_a_reason():
    """Nine notes in one list, eight of them opened by the crawl ("Trip to Kyoto" never was): four item tasks
    (first, last and two between, by where they are drawn), the other four refused as list_quota naming the kept
    ones; the app's other screens keep their tasks."""
    from pipelines.synthesis.goals import Planner
    from pipelines.synthesis.plan_parts import MAX_PER_LIST

    obs, transitions = notes_records()
    notes = next(o for o in obs if o.location.endswith("/notes"))
    titles = ["Groceries", "Trip to Kyoto", "Gift ideas", "Reading list", "Tax forms", "Garden", "Recipes",
              "Packing", "Chores"]
    links = [Element(id=f"note-{i + 1}", role="link", text=t, resource_id="note-link", clickable=True,
                     path=f"body[1]/ul[1]/li[{i + 1}]/a[1]", bbox=BBox(x1=160, y1=95 + 18 * i, x2=380, y2=110 + 18 * i))
             for i, t in enumerate(titles)]
    listed = notes.model_copy(update={"elements": [e for e in notes.elements if e.resource_id != "note-link"] + links})
    pages, edges = [], []
    for i, link in enumerate(links[2:], start=2):
        page = next(o for o in obs if o.location.endswith("/notes/1")).model_copy(update={
            "id": f"obs-note-{i}", "location": f"http://127.0.0.1:8000/notes/page{i}", "exact_hash": f"x{i}",
            "elements": [Element(id=f"h{i}", role="heading", text=link.text, bbox=BBox(x1=10, y1=10, x2=200, y2=40))]})
        pages.append(page)
        x, y = link.bbox.center
        edges.append(Transition(
            id=f"n{i}", run_id="run-1", app_id="notes", from_state="notes", to_state=f"note{i}",
            from_observation_id=notes.id, to_observation_id=page.id, effective=True,
            action=Action(type="click", x=x, y=y, image_width=notes.width, image_height=notes.height,
                          target_element_id=link.id, target_bbox=link.bbox),
            timestamp=T0 + timedelta(minutes=5, seconds=i)))
    graph = build_graph("notes", [listed if o.id == notes.id else o for o in obs] + pages, transitions + edges)
    planner = Planner(graph)
    plans = planner.plans()
    items = [p.facts.target for p in plans if p.kind == "item"]
    assert items == ["Groceries", "Reading list", "Recipes", "Chores"] and len(items) == MAX_PER_LIST
    quota = [(p.facts.target, d) for p, reason, d in planner.refused if reason == "list_quota" and p.kind == "item"]
    assert sorted(t for t, _d in quota) == ["Garden", "Gift ideas", "Packing", "Tax forms"]
    assert all("8 entries" in d and "“Groceries”" in d for _t, d in quota)
    assert {t for t, _d in quota}.isdisjoint(items)
    assert any(p.kind == "screen" and p.facts.target == "Settings" for p in plans)


def test_an_answer_never_quotes_the_apps_pointer_to_its_own_help():
    """Trac puts "Note: See TracReports for help on using and creating reports." under every report, worded per
    kind of page (so no chrome test catches it); asked what an entry says, a person reads the entry, not that."""
    from test_synth_toygraph import GROCERIES_TEXT

    from pipelines.synthesis.plan_parts import HELP_HINT

    hint = Element(id="help", role="", text="Note: See NotesHelp for help on using and sharing your shopping lists.",
                   path="body[1]/div[3]", bbox=BBox(x1=20, y1=200, x2=380, y2=230))
    answer = _plans(notes_graph(extra={"groceries": [hint]}))[("answer", "Groceries")]
    assert answer.goal.answer == GROCERIES_TEXT
    assert all(HELP_HINT.search(t) for t in ("Tip: press ? for shortcuts", "See TracRoadmap for help on roadmaps"))
    assert not any(HELP_HINT.search(t) for t in (GROCERIES_TEXT, "Notes: buy milk", "See you at the lake"))


def test_an_answer_never_quotes_a_forms_own_words_about_its_fields():
    """A CMS's user page is an edit form; under its username field it says "Required. 150 characters or fewer.
    Letters, digits and @/./+/-/_ only." Asked what the page says, a person reads the page's content, not the form
    explaining a field (the text is longer than the item's, so "the longest text" alone would pick it)."""
    from test_synth_toygraph import GROCERIES_TEXT

    form = "body[1]/main[1]/form[1]"
    field = Element(id="user", role="textbox", text="Username", editable=True, path=f"{form}/div[1]/input[1]",
                    bbox=BBox(x1=20, y1=240, x2=380, y2=260))
    help_text = Element(id="help", role="", text="Required. 150 characters or fewer. Letters, digits and @/./+/-/_ "
                        "only.", path=f"{form}/div[1]/div[2]", bbox=BBox(x1=20, y1=262, x2=380, y2=280))
    answer = _plans(notes_graph(extra={"groceries": [field, help_text]}))[("answer", "Groceries")]
    assert answer.goal.answer == GROCERIES_TEXT


def test_a_screen_named_like_the_start_screen_is_no_task():
    """Trac's /wiki is its WikiStart page: "Take me to Welcome to Trac." asked for the screen the task starts on."""
    from pipelines.synthesis.goals import Planner
    from pipelines.synthesis.screens import heading

    obs, transitions = notes_records()
    graph = build_graph("notes", obs, transitions)
    start = heading(graph.observation(next(iter(plan_goals(graph))).steps[0].observation_id))
    renamed = [o.model_copy(update={"elements": [e.model_copy(update={"text": start}) if e.role == "heading" else e
                                                 for e in o.elements]})
               if o.location.endswith("/about") else o for o in obs]
    planner = Planner(build_graph("notes", renamed, transitions))
    targets = [p.facts.target for p in planner.plans()]
    assert "About this app" not in targets and start not in targets
    assert any(r == "already_there" and start in d for _p, r, d in planner.refused)


def test_a_link_outside_every_form_submits_nothing():
    """I Hate Money's empty bill list shows "Add your first bill" below its search box: typing a search term and
    following that link read as a submit ("Create a bill with search “alice”."). A link sends no field unless it
    sits inside the form; there it may be the form's submit."""
    from pipelines.synthesis.navigation import is_commit

    def graph_with_link_at(path: str):
        obs, transitions = notes_records()
        settings = next(o for o in obs if o.location.endswith("/settings"))
        relabelled = settings.model_copy(update={"elements": [
            e.model_copy(update={"text": "Save and continue", "path": path}) if e.id == "about-link"
            else e.model_copy(update={"editable": True, "path": "body[1]/form[1]/input[1]"}) if e.id == "theme"
            else e for e in settings.elements]})
        return build_graph("notes", [relabelled if o.id == settings.id else o for o in obs], transitions)

    outside = graph_with_link_at("body[1]/div[2]/a[1]")
    edge = next(t for t in outside.transitions if t.id == "e14")
    assert not is_commit(outside, edge) and ("screen", "About this app") in _plans(outside)
    inside = graph_with_link_at("body[1]/form[1]/a[1]")
    assert is_commit(inside, next(t for t in inside.transitions if t.id == "e14"))
    assert ("screen", "About this app") not in _plans(inside)


def test_screens_seen_after_the_crawler_switched_the_language_are_no_route():
    """The crawler tapped "Deutsch" on Settings; the German capture of Settings is the same state (a screen with few
    words of its own), and from it the brand link led to the German note list. A fresh app speaks English, so no
    task may route through the German capture ("Take me to Deine Notizen." asked for words nobody sees). Landing
    on the entry screen again ends the switched session: what the crawler did after that counts."""
    from pipelines.synthesis.navigation import switched_captures

    obs, transitions = notes_records()
    by_id = {o.id: o for o in obs}
    settings = next(o for o in obs if o.location.endswith("/settings"))
    notes = next(o for o in obs if o.location.endswith("/notes"))
    brand = Element(id="brand", role="link", text="Demo Notes", resource_id="brand",
                    bbox=BBox(x1=10, y1=270, x2=90, y2=290))
    deutsch = Element(id="lang-de", role="link", text="Deutsch", bbox=BBox(x1=300, y1=270, x2=380, y2=290))
    settings_en = settings.model_copy(update={"elements": [*settings.elements, brand, deutsch]})
    german = {"Settings": "Einstellungen", "Theme": "Design", "About": "Über", "All notes": "Alle Notizen"}
    settings_de = settings_en.model_copy(update={"id": "obs-settings-de", "timestamp": T0 + timedelta(seconds=100),
                                                 "elements": [e.model_copy(update={"text": german.get(e.text, e.text)})
                                                              for e in settings_en.elements]})
    notes_de = notes.model_copy(update={"id": "obs-notes-de", "timestamp": T0 + timedelta(seconds=101),
                                        "elements": [e.model_copy(update={"text": "Deine Notizen"})
                                                     if e.role == "heading" else e for e in notes.elements]})
    by_id[settings.id] = settings_en
    lang = click("settings", "about-link").model_copy(update={"target_element_id": "lang-de",
                                                             "target_bbox": deutsch.bbox})
    via_brand = lang.model_copy(update={"target_element_id": "brand", "target_bbox": brand.bbox})
    extra = [
        Transition(id="e20", run_id="run-1", app_id="notes", from_state="settings", to_state="settings",
                   from_observation_id=settings.id, to_observation_id=settings_de.id, action=lang,
                   timestamp=T0 + timedelta(seconds=100)),
        Transition(id="e21", run_id="run-1", app_id="notes", from_state="settings", to_state="notes-de",
                   from_observation_id=settings_de.id, to_observation_id=notes_de.id, action=via_brand,
                   timestamp=T0 + timedelta(seconds=101)),
    ]
    graph = build_graph("notes", [*by_id.values(), settings_de, notes_de], [*transitions, *extra])
    assert switched_captures(graph) == {settings_de.id, notes_de.id}
    nav = Navigator(graph)
    assert "notes-de" not in nav.dist and nav.clean_capture("settings").id == settings.id
    targets = {t for _k, t in _plans(graph)}
    assert "Deine Notizen" not in targets and {"Settings", "About this app"} <= targets

    # back on the entry screen, the crawl speaks the fresh app's language again
    back_home = Transition(id="e22", run_id="run-1", app_id="notes", from_state="notes-de", to_state="notes",
                           from_observation_id=notes_de.id, to_observation_id=notes.id,
                           action=Action(type="navigate_back"), timestamp=T0 + timedelta(seconds=102))
    again = Transition(id="e23", run_id="run-1", app_id="notes", from_state="notes", to_state="settings",
                       from_observation_id=notes.id, to_observation_id=settings.id,
                       action=click("notes", "settings-link"), timestamp=T0 + timedelta(seconds=103))
    later = build_graph("notes", [*by_id.values(), settings_de, notes_de], [*transitions, *extra, back_home, again])
    assert switched_captures(later) == {settings_de.id, notes_de.id}


def test_an_edit_link_every_item_page_repeats_keeps_the_item():
    """"Edit" is a link on every note's page, so it is shown at three places like a navigation bar's link; but it
    opens a page under the note's own (/notes/1/edit), so the form belongs to the note: "I need the “Edit note”
    form open." did not say which note. A bar link from an item page still drops the item (tested elsewhere)."""
    edit = Element(id="g-edit-link", role="link", text="Edit", resource_id="note-edit-link",
                   bbox=BBox(x1=140, y1=60, x2=240, y2=90))
    observations, transitions = notes_records(extra={"groceries": [edit], "note": [edit.model_copy()]})
    groceries = next(o for o in observations if o.location.endswith("/notes/1"))
    third = groceries.model_copy(update={"id": "obs-note-2", "location": "http://127.0.0.1:8000/notes/2"})
    form = next(o for o in observations if o.location.endswith("/notes/new"))
    edit_form = form.model_copy(update={"id": "obs-edit-1", "location": "http://127.0.0.1:8000/notes/1/edit",
                                        "elements": [e.model_copy(update={"text": "Edit note"})
                                                     if e.role == "heading" else e for e in form.elements]})
    tap = click("groceries", "g-edit").model_copy(update={"target_element_id": "g-edit-link",
                                                          "target_bbox": edit.bbox})
    to_edit = Transition(id="e30", run_id="run-1", app_id="notes", from_state="groceries", to_state="edit",
                         from_observation_id=groceries.id, to_observation_id=edit_form.id, action=tap,
                         timestamp=T0 + timedelta(seconds=5, milliseconds=500))
    graph = build_graph("notes", [*observations, third, edit_form], [*transitions, to_edit])
    plan = _plans(graph)[("screen", "Edit note")]
    assert (plan.facts.item, plan.facts.noun) == ("Groceries", "note")


def test_a_title_written_for_the_program_gives_way_to_the_words_that_opened_it():
    """TiddlyWiki titles its control panel "$:/ControlPanel": "Take me to $:/ControlPanel." is no request a person
    makes; the button that opened it says "control panel". A title people use stays ("Settings")."""
    from pipelines.synthesis.screens import SYSTEM_NAME

    for name in ("$:/ControlPanel", "$:/config/NewJournal/Text", "docs/guide.md"):
        assert SYSTEM_NAME.match(name), name
    for name in ("Settings", "WikiStart", "Milestone: milestone1", "Books / Films"):
        assert not SYSTEM_NAME.match(name), name
    observations, transitions = notes_records()
    renamed = [o.model_copy(update={"elements": [e.model_copy(update={"text": "$:/Settings"}) if e.role == "heading"
                                                 else e for e in o.elements]})
               if o.location.endswith("/settings") else o for o in observations]
    graph = build_graph("notes", renamed, transitions)
    plans = _plans(graph)
    assert "Settings" in {t for _k, t in plans} and "$:/Settings" not in {t for _k, t in plans}
    # and the steps on it say the same: "I'm on the Settings screen", never "This is $:/Settings."
    from pipelines.synthesis.calls import step_call

    about = plans[("screen", "About this app")]
    assert step_call(graph, about, 1, "Open About this app.", "en", "v").payload["screen"]["screen"] == "Settings"


def test_a_control_that_sounds_like_a_submit_is_probed_where_the_crawl_saw_it_only_open_a_screen():
    """I Hate Money's "Add a new bill" says "add", so the prober never tried it from the bill list the crawl saw
    it on — and the one create-bill route, through "Toggle filters", stayed a refused detour. The crawl tapped
    that very control elsewhere and it only opened the form: trying it again submits nothing."""
    from pipelines.synthesis.probe import plan_probes, probe_plans

    def graph_with(label: str):
        same = Element(id="side-about", role="link", text=label, resource_id="settings-about",
                       bbox=BBox(x1=20, y1=230, x2=140, y2=250), clickable=True)
        observations, transitions = notes_records(extra={"notes": [same]})
        relabelled = [o.model_copy(update={"elements": [e.model_copy(update={"text": label}) if e.id == "about-link"
                                                        else e for e in o.elements]})
                      if o.location.endswith("/settings") else o for o in observations]
        return build_graph("notes", relabelled, transitions)

    graph = graph_with("Add details")
    assert ("notes", "side-about", "shortcut") in {(p.state, p.element_id, p.why)
                                                    for p in plan_probes(graph, probe_plans(graph))}


def test_a_link_that_says_only_where_to_click_names_no_entry():
    """A Trac wiki page's list reads "see this link": "Show me “link”." asked for a word that says where to click.
    The page the link opens is still a goal, named by its own heading."""
    from pipelines.synthesis.plan_parts import PLACEHOLDER_LABEL

    for placeholder in ("link", "here", "Read more", "click here", "» more"):
        assert PLACEHOLDER_LABEL.match(placeholder), placeholder
    for name in ("Linked lists", "Here and Now", "More about Kyoto", "Groceries"):
        assert not PLACEHOLDER_LABEL.match(name), name
    observations, transitions = notes_records()
    relabelled = [o.model_copy(update={"elements": [e.model_copy(update={"text": "link"}) if e.id == "note-1" else e
                                                    for e in o.elements]})
                  if o.location.endswith("/notes") else o for o in observations]
    plans = _plans(build_graph("notes", relabelled, transitions))
    assert ("item", "link") not in plans and ("screen", "Groceries") in plans


def test_a_row_opened_by_its_id_is_named_by_its_row():
    """datasette's tables open a row through its id link ("3"): "Open authors row 3." says nothing a person would
    ask for; the row's own name cell does ("Open the author “Italo Calvino”."). A name the table shows twice, or a
    row with nothing but numbers and dates, names no row."""
    from pipelines.synthesis.screens import row_label

    def row(n: int, name: str) -> list[Element]:
        base = f"body[1]/table[1]/tbody[1]/tr[{n}]"
        return [Element(id=f"id-{n}", role="link", text=str(n), path=f"{base}/td[1]/a[1]", clickable=True,
                        bbox=BBox(x1=20, y1=40 * n, x2=40, y2=40 * n + 20)),
                Element(id=f"name-{n}", role="cell", text=name, path=f"{base}/td[2]",
                        bbox=BBox(x1=60, y1=40 * n, x2=300, y2=40 * n + 20))]

    table = make_observation("notes", None).model_copy(update={"elements": [
        *row(1, "Groceries"), *row(2, "Trip to Kyoto"), *row(3, "2024-06-01"), *row(4, "Trip to Kyoto")]})
    by_id = {e.id: e for e in table.elements}
    assert row_label(table, by_id["id-1"]) == "Groceries"
    assert row_label(table, by_id["id-2"]) == ""  # shown twice
    assert row_label(table, by_id["id-3"]) == ""  # a date names no row
    # On the toy app: the notes list as a table of id links; "1" opens Groceries.
    observations, transitions = notes_records()
    tabled = []
    for o in observations:
        if o.location.endswith("/notes"):
            els = []
            for e in o.elements:
                if e.id in ("note-1", "note-2"):
                    n = int(e.id[-1])
                    link, name = row(n, e.text)
                    els += [link.model_copy(update={"id": e.id, "resource_id": e.resource_id}), name]
                else:
                    els.append(e)
            o = o.model_copy(update={"elements": els})
        tabled.append(o)
    plans = _plans(build_graph("notes", tabled, transitions))
    assert ("item", "Groceries") in plans and plans[("item", "Groceries")].goal.must_show == ["Groceries"]
