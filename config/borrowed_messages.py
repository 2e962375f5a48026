"""Messages of Django and of third-party apps that our zh-Hans catalogue translates for them.

Our catalogue (`LOCALE_PATHS`) is read before theirs, so a message marked here and translated
in `locale/zh_Hans/LC_MESSAGES/django.po` replaces their translation, or stands in for one they
lack. Each is marked with `gettext_noop` only so that makemessages keeps it in the catalogue
(nothing imports this module); the code that shows it (Django's forms and admin, django-axes)
translates it itself.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

BORROWED = (
    # Django's form label suffix (`Form.label_suffix`): its zh_Hans catalogue keeps the ASCII
    # colon after a Chinese label; ours holds the full-width colon.
    gettext_noop(":"),
    # The admin's index: column headings its zh_Hans catalogue does not translate yet.
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    # django-axes (the admin's lockouts) has no Chinese catalogue.
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
)
