from django.urls import path

from stats.apis import StatsOverviewApi
from stats.views import overview_page

# Mounted under v1/ (the API, bearer keys) ...
urlpatterns = [path("stats/overview", StatsOverviewApi.as_view(), name="stats-overview")]

# ... and under stats/ (the product owners' pages, Django sessions).
page_urlpatterns = [path("", overview_page, name="stats-page")]
