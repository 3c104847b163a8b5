"""The HTTP edge: the app factory, routes, schemas, pages and error mapping."""
