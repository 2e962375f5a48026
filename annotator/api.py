"""`POST /api/token/`: a new API token for a username and password (django-axes counts the
failures, as on the login page).

Every successful call makes a new key and revokes the one before (`annotator.accounts.
create_api_token`): only the key's digest is stored, so the key is in this one answer and can
never be returned again. A script keeps the key it got; calling again replaces it.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import parsers, renderers, serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.accounts import create_api_token


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
        serializer.is_valid(raise_exception=True)
        key, created = create_api_token(serializer.validated_data["user"])
        return Response({"token": key, "created": created})
