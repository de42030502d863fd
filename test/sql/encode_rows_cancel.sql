-- row_to_bson can be canceled while it works through a long array: it reads
-- the elements one at a time and checks for interrupts as it goes.  The
-- array's last element has 35 significant digits, which no decimal128
-- holds: a call that runs to the end fails with 22003, one that is canceled
-- on the way fails with 57014.  Only SQLSTATEs are shown.
\set VERBOSITY sqlstate
CREATE TEMP TABLE big_amounts AS
	SELECT array_fill(1::numeric, ARRAY[9999999]) || '12345678901234567890123456789012345'::numeric AS amounts;
SELECT array_length(amounts, 1), amounts[1] AS first FROM big_amounts;
SELECT row_to_bson(ROW(amounts[10000000])) FROM big_amounts;

SET statement_timeout = '100ms';
SELECT length(row_to_bson(b)) FROM big_amounts b;
RESET statement_timeout;

DROP TABLE big_amounts;
