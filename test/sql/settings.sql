-- Misspelt bson_out.* settings.  From PostgreSQL 15 on, the library reserves
-- its prefix: a misspelt setting made before it loads is removed with a
-- warning, and one made after is refused.  Before 15 PostgreSQL only warns of
-- placeholders that exist when the library loads, and accepts later ones
-- (expected/settings_1.out).

-- a new session, in which the library is not loaded yet
\c
SET bson_out.ascii_fast_pth = off;
LOAD 'bson_out';
SHOW bson_out.ascii_fast_path;
SET bson_out.ascii_fast_pth = off;
