"""Facts written and listed from a test through the API: a fact's request body, POST /v1/facts with its status
checked, GET /v1/facts; and three texts about Paul that contradict each other."""

from tests.conftest import PROJECT

PAUL_IN_NANTES = "Paul lives in Nantes with his wife and their two children."
PAUL_IN_BORDEAUX = "Paul lives in Bordeaux with his wife and their two children."
PAUL_IN_LILLE = "Paul lives in Lille with his wife and their two children."


def fact(text, subject="alice", **extra):
    return {"project_id": PROJECT, "subject_id": subject, "text": text, **extra}


def post_fact(api, text, **extra):
    response = api.post("/v1/facts", fact(text, **extra), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def list_facts(api, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project_id": PROJECT, "subject_id": "alice", **params}.items())
    response = api.get(f"/v1/facts?{query}")
    assert response.status_code == 200, response.content
    return response.json()
