"""The local Citus cluster's nodes (hakimem/citus.py): the workers it made, so that `citus_cluster stop` and `status`
find the one `citus_cluster add-worker` added. No cluster needed."""

from hakimem.citus import DEFAULT_PORT, nodes, workers_made


def _made(base, name):
    (base / name).mkdir()
    (base / name / "PG_VERSION").write_text("18\n")


def test_a_new_cluster_has_a_coordinator_and_two_workers(tmp_path):
    assert workers_made(tmp_path) == 2
    assert [(n.name, n.port) for n in nodes(tmp_path)] == [
        ("coordinator", DEFAULT_PORT),
        ("worker1", DEFAULT_PORT + 1),
        ("worker2", DEFAULT_PORT + 2),
    ]


def test_an_added_worker_is_found_by_its_data_folder(tmp_path):
    for name in ("coordinator", "worker1", "worker2", "worker3"):
        _made(tmp_path, name)
    (tmp_path / "worker4").mkdir()  # never initialised: not a node
    (tmp_path / "workers.txt").write_text("")
    assert workers_made(tmp_path) == 3
    assert [(n.name, n.port, n.data) for n in nodes(tmp_path, 9720)][-1] == ("worker3", 9723, tmp_path / "worker3")
