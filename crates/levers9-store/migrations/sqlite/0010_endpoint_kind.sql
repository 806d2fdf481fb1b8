-- See migrations/postgres/0010_endpoint_kind.sql.
ALTER TABLE endpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'json';
