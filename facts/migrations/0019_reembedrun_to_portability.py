"""ReembedRun leaves the store's state for the portability app's (portability/migrations/0001_initial.py); its
table, facts_reembedrun, stays where it is, rows and all."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0018_admin_log_erase"),
        ("portability", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ReembedRun")], database_operations=[]
        ),
    ]
