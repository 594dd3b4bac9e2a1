//! Shared test helpers: spawn a server, temp dirs, models.
