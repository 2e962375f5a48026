"""`POST /api/token/`: a new API token for a username and password (django-axes counts the
failures, as on the login page).

Every successful call makes a new key and revokes the one before (`annotator.accounts.
create_api_token`): only the key's digest is stored, so the key is in this one answer and can
never be returned again. A script keeps the key it got; calling again replaces it. Five wrong
passwords lock the account from that address (`AXES_LOCKOUT_PARAMETERS`): a 429, as on the
login pages.
"""

from __future__ import annotations

from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import parsers, renderers, serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.accounts import create_api_token


def _locked() -> str:
    # The lockout page's words (templates/registration/locked_out.html).
    return gettext(
        "This account is locked for 15 minutes after repeated wrong passwords. Try again "
        "later, or ask a project lead to reset your password."
    )


class ObtainToken(APIView):
    """DRF's `ObtainAuthToken` (its serializer: `authenticate` with the request), answering
    with a key made now instead of the stored one."""

    throttle_classes = ()
    authentication_classes = ()
    permission_classes = ()
    parser_classes = (parsers.FormParser, parsers.MultiPartParser, parsers.JSONParser)
    renderer_classes = (renderers.JSONRenderer,)

    @extend_schema(
        request=AuthTokenSerializer,
        responses=inline_serializer(
            "NewToken",
            {"token": serializers.CharField(), "created": serializers.DateTimeField()},
        ),
        description="A new token for the account; the one before stops working.",
    )
    def post(self, request: Request) -> Response:
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            # django-axes marks the request it refused (its middleware sees only Django's
            # request, not DRF's): say it is locked rather than that the password is wrong.
            if getattr(request, "axes_locked_out", False):
                return Response({"detail": _locked()}, status=429)
            raise ValidationError(serializer.errors)
        key, created = create_api_token(serializer.validated_data["user"])
        return Response({"token": key, "created": created})
