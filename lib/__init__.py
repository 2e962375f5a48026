"""Small, dependency-free helpers shared by every app (no Django models, imports no app)."""
