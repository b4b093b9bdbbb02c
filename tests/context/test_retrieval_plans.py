"""Phase 1 really runs on its indexes at a realistic size: EXPLAIN (ANALYZE) of the retrieval query on
30,000 facts, where one scope holds 18,000 and small ones ~45."""

from dataclasses import replace

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from context import multi_hop, retrieval, retrieval_sql
from facts.selectors import volatility_cutoffs
from bench import dataset
from hakimem.rowsecurity import API_ROLE, scope_enter
from tests.context.plans import explain, load_30k

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def loaded(django_db_setup, django_db_blocker, tmp_path_factory):
    """The 30k facts, loaded once for this module (a load takes seconds): its tests only read them (EXPLAIN,
    table statistics), each in a transaction rolled back. Emptied after, as a transactional test leaves the
    tables."""
    with django_db_blocker.unblock():
        data = load_30k(tmp_path_factory.mktemp("bench-cache"))
    yield data
    with django_db_blocker.unblock():
        call_command("flush", verbosity=0, interactive=False)


def test_large_scope_uses_hnsw_and_gin(loaded):
    sizes, _ = loaded
    assert sizes["big"] == 18_000
    plan = explain("big", dataset.generate_queries(1, subject_id="big")[0])
    assert "Index Scan using facts_fact_embedding_hnsw" in plan, plan
    assert "facts_fact_search_gin" in plan, plan
    assert "Seq Scan on facts_fact" not in plan, plan


def test_small_scope_sorts_its_few_rows_exactly(loaded):
    _, small = loaded
    assert retrieval.table_stats().dense_exact(dataset.PROJECT, small)
    plan = explain(small, dataset.generate_queries(1, subject_id=small)[0], retrieval_sql.HYBRID_EXACT_CANDIDATES_SQL)
    assert "facts_fact_embedding_hnsw" not in plan, plan  # the graph would be walked for a handful of matches
    assert "Index Only Scan using facts_fact_scope_vectors" in plan, plan
    assert "Seq Scan on facts_fact" not in plan, plan


def test_exact_dense_leg_reads_vectors_from_the_covering_index_not_the_heap(loaded):
    plan = explain("big", dataset.generate_queries(1, subject_id="big")[0], retrieval_sql.HYBRID_EXACT_CANDIDATES_SQL)
    assert "Index Only Scan using facts_fact_scope_vectors" in plan, plan
    assert "facts_fact_embedding_hnsw" not in plan, plan


def test_the_episode_graph_query_walks_the_event_graph(loaded):
    """Episodes take the facts' two-phase path on their own table. (The 1,800 events of the big scope are
    sorted exactly, 0.5 ms by the cost model against ~5 ms for the filtered walk; the graph's statement is
    checked here for the scopes that will need it.)"""
    assert retrieval.table_stats(retrieval.EVENTS).dense_exact(dataset.PROJECT, "big")
    plan = explain(
        "big", dataset.generate_queries(1, subject_id="big")[0], retrieval_sql.EPISODES_HYBRID_SQL, retrieval.EVENTS
    )
    assert "Index Scan using facts_event_embedding_hnsw" in plan, plan


def test_episodes_of_a_small_scope_sort_exactly_from_the_covering_index(loaded):
    _, small = loaded
    assert retrieval.table_stats(retrieval.EVENTS).dense_exact(dataset.PROJECT, small)
    plan = explain(
        small,
        dataset.generate_queries(1, subject_id=small)[0],
        retrieval_sql.EPISODES_HYBRID_EXACT_SQL,
        retrieval.EVENTS,
    )
    assert "facts_event_embedding_hnsw" not in plan, plan
    assert "Index Only Scan using facts_event_scope_vectors" in plan, plan
    assert "Seq Scan on facts_event" not in plan, plan


def test_a_plain_calls_one_statement_walks_both_graphs_for_a_large_scope(loaded):
    plan = explain("big", dataset.generate_queries(1, subject_id="big")[0], retrieval_sql.TOGETHER_SQL[False, False])
    assert "Index Scan using facts_fact_embedding_hnsw" in plan, plan
    assert "Index Scan using facts_event_embedding_hnsw" in plan, plan
    assert "Seq Scan on facts_fact" not in plan and "Seq Scan on facts_event" not in plan, plan


def test_a_plain_calls_one_statement_sorts_a_small_scope_from_both_covering_indexes(loaded):
    _, small = loaded
    plan = explain(small, dataset.generate_queries(1, subject_id=small)[0], retrieval_sql.TOGETHER_SQL[True, True])
    assert "Index Only Scan using facts_fact_scope_vectors" in plan, plan
    assert "Index Only Scan using facts_event_scope_vectors" in plan, plan
    assert "_embedding_hnsw" not in plan, plan
    assert "Seq Scan on facts_fact" not in plan and "Seq Scan on facts_event" not in plan, plan


def test_a_small_scopes_plain_call_reads_its_scope_whole_from_the_scope_indexes(loaded):
    """WHOLE_SCOPE_SQL for a ~45-fact scope: the statistics choose it, it reads no graph and scans no table, and it
    reads the scope's rows once (no second fetch by id); the 18,000-fact scope is not chosen."""
    sizes, small = loaded
    now = timezone.now()
    lookup = retrieval.lookup_for(
        project_id=dataset.PROJECT, subject_id=small, query="x", now=now, cutoffs=volatility_cutoffs(now)
    )
    assert retrieval.whole_scope_expected(lookup, retrieval.DENSE_TOP_K)
    assert not retrieval.whole_scope_expected(replace(lookup, subject_id="big"), retrieval.DENSE_TOP_K)
    plan = explain(small, dataset.generate_queries(1, subject_id=small)[0], retrieval_sql.WHOLE_SCOPE_SQL)
    assert "_embedding_hnsw" not in plan, plan
    assert "Seq Scan on facts_fact" not in plan and "Seq Scan on facts_event" not in plan, plan
    assert "facts_fact_pkey" not in plan and "facts_event_pkey" not in plan, plan
    assert f"rows={sizes[small]}" in plan, plan


def test_the_dense_strategy_follows_the_scope_share_of_the_table(loaded):
    sizes, small = loaded
    stats = retrieval.table_stats()
    assert stats.rows == pytest.approx(30_000, rel=0.05)
    assert stats.scope_rows("big") == pytest.approx(18_000, rel=0.1)
    assert stats.dense_exact(dataset.PROJECT, small)
    # the rule itself, on round figures: a scope of 10k in 200k facts is sorted exactly, 100k walks the graph
    big_table = retrieval.TableStats(rows=200_000, subject_freq={"mid": 0.05, "big": 0.5})
    assert big_table.dense_exact("p", "mid") and not big_table.dense_exact("p", "big")


def test_multi_hop_plans_each_name_with_its_own_frequency(loaded):
    """A name in a few facts of the 18k scope is read from the GIN index; one in thousands walks the scope
    newest first. One plan for both (a LATERAL over an array) walked the scope for the rare name too."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT word, ndoc FROM ts_stat($$SELECT search_vector FROM facts_fact WHERE subject_id = 'big'$$)"
            " WHERE word ~ '^[a-z]{4,}$' ORDER BY ndoc DESC"
        )
        counts = cursor.fetchall()
    common = counts[0][0]
    rare = next(word for word, n in counts if 5 <= n <= 20)
    lookup = retrieval.Lookup(project_id=dataset.PROJECT, subject_id="big", now=now, cutoffs=volatility_cutoffs(now))
    params = {
        **lookup.params(retrieval.TextQuery()),
        "entity_0": rare,
        "entity_1": common,
        "exclude": [],
        "per_entity": multi_hop.MULTI_HOP_MAX_PER_ENTITY,
    }
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (COSTS OFF) " + retrieval_sql.multi_hop_sql(2), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    branches = plan.split("->  Limit")[1:]
    assert len(branches) == 2, plan
    assert "facts_fact_search_gin" in branches[0] and "facts_fact_scope_recorded" not in branches[0], plan
    assert "Index Scan using facts_fact_scope_recorded" in branches[1], plan


def test_a_mid_size_scope_reads_its_lexical_matches_from_the_gin_index_alone(loaded):
    """The leg asks for its words AND the scope's lexeme (retrieval_sql.scoped_match): GIN intersects them, where the
    leg of words alone ANDed the table-wide matches with a bitmap of all 4,500 rows of the scope."""
    query = next(
        q
        for q in dataset.generate_queries(40, subject_id="mid-0")
        if retrieval.lookup_for(
            project_id=dataset.PROJECT,
            subject_id="mid-0",
            query=q,
            now=timezone.now(),
            cutoffs=volatility_cutoffs(timezone.now()),
        ).fact_text.leg_tsq
    )
    plan = explain("mid-0", query)
    leg = plan[plan.index("Subquery Scan on lexical") :]
    assert "Bitmap Index Scan on facts_fact_search_gin" in leg and "'scope " in leg, plan
    assert "BitmapAnd" not in plan and "facts_fact_scope_recorded" not in plan, plan


def test_a_scope_with_its_own_full_text_index_reads_its_lexical_matches_from_it(loaded):
    """Words absent from the scope cost nothing in the scope's own index, where the table-wide one walks their posting
    lists across every scope (a 100k scope at 1M facts: 2.2 -> 0.03 ms at the median)."""
    from facts.scope_graphs import scope_text_index_create

    query = dataset.generate_queries(1, subject_id="big")[0]
    name = scope_text_index_create(project_id=dataset.PROJECT, subject_id="big")  # rolled back with the test
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    plan = explain("big", query)
    assert f"Bitmap Index Scan on {name}" in plan, plan


def test_a_name_common_in_the_scope_by_its_own_counts_walks_the_scope_and_finds_the_same_facts(loaded):
    """The planner judges a name by its share of the table; the scope's own word counts (retrieval.ScopeWords) say
    when it is common in the scope: its branch then walks the scope newest first (ts_match_vq, which no index
    serves) and returns what the GIN branch returns."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT word, ndoc FROM ts_stat($$SELECT search_vector FROM facts_fact WHERE subject_id = 'big'"
            " AND status = 'active'$$) WHERE word ~ '^[a-z]{4,}$' AND ndoc BETWEEN 100 AND 400 ORDER BY ndoc"
        )
        name = cursor.fetchone()[0]
    base = retrieval.Lookup(project_id=dataset.PROJECT, subject_id="big", now=now, cutoffs=volatility_cutoffs(now))
    # walked when count^2 > per_entity x items: in a scope of 18,000, from sqrt(5 x 18,000) = 300 facts on
    counted = {
        n: replace(
            base, scope_words={retrieval.FACTS: retrieval.ScopeWords(items=18_000, counts={name: n}, unlisted_max=3)}
        )
        for n in (299, 301)
    }
    assert multi_hop._walked(counted[299], [name.title()]) == set() and multi_hop._walked(base, [name]) == set()
    walked = multi_hop._walked(counted[301], [name.title()])
    assert walked == {0}

    params = {
        **base.params(retrieval.TextQuery()),
        "entity_0": name,
        "exclude": [],
        "per_entity": multi_hop.MULTI_HOP_MAX_PER_ENTITY,
    }
    plans, rows = [], []
    for sql in (retrieval_sql.multi_hop_sql(1), retrieval_sql.multi_hop_sql(1, walked)):
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (COSTS OFF) " + sql, params)
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
            cursor.execute(sql, params)
            rows.append(cursor.fetchall())
    assert "facts_fact_search_gin" in plans[0], plans[0]
    assert "Index Scan using facts_fact_scope_recorded" in plans[1] and "facts_fact_search_gin" not in plans[1], plans[
        1
    ]
    assert len(rows[0]) == multi_hop.MULTI_HOP_MAX_PER_ENTITY and rows[0] == rows[1]


@pytest.fixture(scope="module")
def procedures(loaded, django_db_blocker):
    """A third of the facts again as procedures (the big scope ~6,000, small ones ~15), 200 of them the project's
    own (subject_id ''), vacuumed; committed, and emptied with the rest after the module."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("""
            INSERT INTO facts_procedure (id, project_id, subject_id, title, text, category, importance, embedding,
                                         status, metadata, created_at, updated_at)
            SELECT gen_random_uuid(), project_id, CASE WHEN n <= 200 THEN '' ELSE subject_id END, left(text, 60), text,
                   category, importance, embedding, 'active', '{}', recorded_from, recorded_from
              FROM (SELECT f.*, row_number() OVER (ORDER BY f.id) AS n FROM facts_fact f
                     WHERE f.status = 'active' AND abs(hashtext(f.id::text)) % 3 = 0) f""")
        cursor.execute("VACUUM ANALYZE facts_procedure")  # as autovacuum leaves a table: its visibility map set
    return loaded


def test_the_procedure_graph_query_walks_the_procedure_graph_and_full_text_index(procedures):
    """As for episodes: the ~6,200 procedures the big subject may be served (its own and the project's) are
    sorted exactly (~1.6 ms by the cost model against ~4.6 ms for the filtered walk); the graph's statement is
    checked here for the scopes that will need it."""
    stats = retrieval.table_stats(retrieval.PROCEDURES)
    assert stats.scope_rows("big", project_wide=True) == pytest.approx(6_200, rel=0.15)
    assert stats.dense_exact(dataset.PROJECT, "big", project_wide=True)
    plan = explain(
        "big",
        dataset.generate_queries(1, subject_id="big")[0],
        retrieval_sql.PROCEDURES_HYBRID_SQL,
        retrieval.PROCEDURES,
    )
    assert "Index Scan using facts_procedure_embedding_hnsw" in plan, plan
    assert "facts_procedure_search_gin" in plan, plan
    assert "Seq Scan on facts_procedure" not in plan, plan


@pytest.mark.parametrize("scope", ["small", "big"])
def test_procedures_sort_exactly_from_the_covering_index(procedures, scope):
    subject = procedures[1] if scope == "small" else "big"
    assert retrieval.table_stats(retrieval.PROCEDURES).dense_exact(dataset.PROJECT, subject, project_wide=True)
    plan = explain(
        subject,
        dataset.generate_queries(1, subject_id=subject)[0],
        retrieval_sql.PROCEDURES_HYBRID_EXACT_SQL,
        retrieval.PROCEDURES,
    )
    assert "facts_procedure_embedding_hnsw" not in plan, plan
    assert "Index Only Scan using facts_procedure_scope_vectors" in plan, plan  # the subject's range and the project's
    assert "Seq Scan on facts_procedure" not in plan, plan


def test_query_time_contradictions_read_the_candidates_by_id(loaded):
    # given a call's 64 candidates in the scope of 18,000 facts
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id::text FROM facts_fact WHERE project_id = %s AND subject_id = 'big' LIMIT 64", [dataset.PROJECT]
        )
        ids = [row[0] for row in cursor.fetchall()]
        scope_enter(API_ROLE, dataset.PROJECT)
        cursor.execute(
            "EXPLAIN (ANALYZE, COSTS OFF) " + retrieval_sql.CONTRADICTION_PAIRS_SQL,
            {
                "project_id": dataset.PROJECT,
                "subject_id": "big",
                "ids": ids,
                "min_similarity": 0.75,
                "max_pairs": retrieval.CONTRADICTION_MAX_PAIRS,
                "claimed_a": [],
                "claimed_b": [],
            },
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # then their vectors are read by id, never by walking the scope
    assert "Index Scan using facts_fact_pkey" in plan and "Seq Scan on facts_fact" not in plan, plan


def test_the_next_turns_of_a_calls_questions_are_read_by_id_and_one_scope_index_probe_each(loaded):
    # given 20 of the 1,800 events of "big" (a call's packable questions)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id::text FROM facts_event WHERE project_id = %s AND subject_id = 'big' LIMIT 20", [dataset.PROJECT]
        )
        ids = [row[0] for row in cursor.fetchall()]
    # when their next turns are read (retrieval.next_turns)
    plan = explain("big", "anything", retrieval_sql.NEXT_TURNS_SQL, retrieval.EVENTS, {"ids": ids})
    # then each question is found by id, and its next event by the scope's time index, from the question's place on
    assert "facts_event_pkey" in plan, plan
    assert "Index Only Scan Backward using facts_event_scope_time" in plan, plan
    assert "ROW(occurred_at, id) > ROW(q.occurred_at, q.id)" in plan, plan  # an index bound, not a filter
    assert "Seq Scan on facts_event" not in plan, plan


@pytest.mark.parametrize("unknown", [True, False], ids=["unknown subject", "small scope"])
def test_an_empty_calls_look_at_its_scope_probes_the_scope_indexes(loaded, unknown):
    """Asked only by a call that found no candidate: a probe of each scope index, never a scan of a table. (For the
    18,000 facts of "big", 60% of the table, the planner rightly reads the table until its first row of the
    scope instead: a couple of pages.)"""
    _, small = loaded
    plan = explain("nobody" if unknown else small, "anything", retrieval_sql.SCOPE_STATE_SQL)
    assert "facts_fact_scope_status" in plan, plan
    # The tables this module fills; the empty identity blocks' one page is rightly read whole once an earlier test
    # of the same database (another order under pytest-xdist) has written and emptied it.
    for table in ("facts_fact", "facts_event", "facts_procedure"):
        assert f"Seq Scan on {table} " not in plan, plan
