"""API tokens as hashes (#28 review, L1): every key DRF's `authtoken` kept in clear becomes a
django-rest-knox row holding its digest and lookup prefix (`annotator.tokens`), then the old
table is dropped and `authtoken`'s migrations and content types are forgotten, as if the app
had never been installed. A script keeps working with the key it has. Not reversible: the keys
are gone (going back leaves the hashed tokens in place).
"""

from datetime import timezone

from django.db import migrations
from django.db.migrations.recorder import MigrationRecorder
from knox.crypto import hash_token
from knox.settings import CONSTANTS

# The previous release reads keys from `authtoken_token`, which this migration drops once it has
# hashed them: an old web host would answer every token request with an error. Upgrade with
# every web host stopped (docs/OPERATIONS.md, "Upgrading").
BREAKS_PREVIOUS_RELEASE = (
    "drops authtoken_token after hashing its keys into knox's table: stop every web host, "
    "migrate, start the new release"
)

OLD_APP = "authtoken"
OLD_TABLE = "authtoken_token"  # rest_framework.authtoken.models.Token, no longer installed


def move_clear_tokens(connection, token_model) -> int:
    """Hash the keys of the old table into `token_model` (knox's `AuthToken`) and drop it;
    the number of tokens moved (0 where the table never existed: a new database)."""
    if OLD_TABLE not in connection.introspection.table_names():
        return 0
    quoted = connection.ops.quote_name(OLD_TABLE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, created, user_id FROM {quoted}")
        rows = cursor.fetchall()
    for key, created, user_id in rows:
        digest = hash_token(key)
        token = token_model(
            digest=digest, token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH], user_id=user_id
        )
        token_model.objects.bulk_create([token])  # (knox's manager makes a key of its own)
        # `created` is auto_now_add: kept by an update after the insert. (SQLite's cursor gives
        # the stored UTC time without its zone.)
        if created.tzinfo is None:
            created = created.replace(tzinfo=timezone.utc)
        token_model.objects.filter(digest=digest).update(created=created)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {quoted}")
    return len(rows)


def forward(apps, schema_editor):
    connection = schema_editor.connection
    move_clear_tokens(connection, apps.get_model("knox", "AuthToken"))
    MigrationRecorder(connection).migration_qs.filter(app=OLD_APP).delete()
    # Its permissions go with the content types (a cascade).
    apps.get_model("contenttypes", "ContentType").objects.filter(app_label=OLD_APP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0012_zh_verbose_names"),
        ("knox", "0009_extend_authtoken_field"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
