from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotator import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/", include("django.contrib.auth.urls")),
    path("invite/<str:token>/", views.invite, name="accept_invite"),
    path("projects/<int:project_id>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/invites/", views.create_invite, name="create_invite"),
    path("projects/<int:project_id>/volunteers/", views.add_volunteer, name="add_volunteer"),
    path("taxonomy/", include("taxonomy.urls")),
    path("", include("annotator.labeling_urls")),
    path("", include("ingest.urls")),
    path("", include("agreement.urls")),
    path("", include("interviews.urls")),
    path("", include("taxonomy.project_urls")),
    path("", include("dataset.urls")),
]
