"""The admin's home page tells a curator how many conflict sets wait for them, within the projects they may see."""

import pytest
from django.utils import timezone

from facts.models import ConflictStatus
from hakimem.models import StaffProjectAccess
from tests.conftest import OTHER_PROJECT, PROJECT, make_user
from tests.facts.factories import ConflictSetFactory

pytestmark = pytest.mark.django_db


def home(client, user) -> str:
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_home_page_counts_the_open_conflicts_a_curator_may_see(client, curator):
    # given two open sets in one project, one in another, and a resolved one
    ConflictSetFactory.create_batch(2, project_id=PROJECT)
    ConflictSetFactory(project_id=OTHER_PROJECT)
    ConflictSetFactory(project_id=PROJECT, status=ConflictStatus.RESOLVED, resolved_at=timezone.now())
    # then a curator of every project is told of the three open ones, with a link to them
    page = home(client, curator)
    assert "3 open conflicts</strong> need a curator" in page
    assert "/admin/facts/conflictset/?status__exact=open" in page
    # and a curator limited to one project of its two
    StaffProjectAccess.objects.create(user=curator, project_id=OTHER_PROJECT)
    curator.refresh_from_db()
    assert "1 open conflict</strong> needs a curator" in home(client, curator)


def test_no_banner_without_open_conflicts_or_the_permission(client, curator, roles):
    ConflictSetFactory(project_id=PROJECT, status=ConflictStatus.RESOLVED, resolved_at=timezone.now())
    assert "need a curator" not in home(client, curator) and "needs a curator" not in home(client, curator)
    ConflictSetFactory(project_id=PROJECT)
    staff_without_groups = make_user("sven", staff=True)
    assert "a curator" not in home(client, staff_without_groups)
