-- The CaseFacts release reads its windows from build.casefacts_windows (sql/casefacts/release_windows.sql),
-- so the compatibility view migration 100 left in curated goes: curated holds only what users query.
DROP VIEW IF EXISTS curated.casefacts_windows;
