-- What an endpoint serves: 'json' (a function called with the request's
-- JSON object as keyword arguments) or 'asgi' (an ASGI app, sent the whole
-- HTTP request under its path).
ALTER TABLE endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'json';
