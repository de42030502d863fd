# bson_out: PostgreSQL data to BSON.  PGXS build.

EXTENSION = bson_out
EXTVERSION = 0.4.0

MODULE_big = bson_out
OBJS = \
	bson_out.o \
	src/bson_encoding.o \
	src/bson_extjson.o \
	src/bson_json.o \
	src/bson_jsonb.o \
	src/bson_numeric.o \
	src/bson_read.o \
	src/bson_reader.o \
	src/bson_record.o \
	src/bson_to_json.o \
	src/bson_to_jsonb.o \
	src/bson_writer.o \
	src/extjson_values.o

# The current install script, every earlier one (so that an old version can
# still be installed and updated) and the upgrade scripts between them.
DATA = $(wildcard $(EXTENSION)--*.sql)

# Tests that run in the UTF8 database; the encoding tests run in their own
# databases (installcheck-encodings below).
REGRESS = types numbers doubles strings structure errors fast_path settings json_text extjson rows numeric_infinity decode decode_invalid upgrade
REGRESS_OPTS = --load-extension=$(EXTENSION)

# Our code compiles cleanly with -Wextra; PostgreSQL's own headers do not
# (unused parameters in inline functions), so they are included as system
# headers.
PG_CFLAGS = -Wall -Wextra
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server)
EXTRA_CLEAN = results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies unless PostgreSQL was configured with
# --enable-depend; the headers are few, so every object depends on all.
$(OBJS): $(wildcard src/*.h)

# The encoding tests, each in a database of its encoding.
installcheck-encodings: installcheck-latin1 installcheck-sql-ascii installcheck-win1252

installcheck-latin1:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=LATIN1 --dbname=bson_out_latin1 encoding_latin1

installcheck-sql-ascii:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=SQL_ASCII --dbname=bson_out_sql_ascii encoding_sql_ascii

installcheck-win1252:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=WIN1252 --dbname=bson_out_win1252 encoding_win1252

.PHONY: installcheck-encodings installcheck-latin1 installcheck-sql-ascii installcheck-win1252

# pg_bsonexport (exporter/, issue 7): the command-line exporter, built,
# installed and cleaned with the extension.  It is a libpq client, not part of
# the server module, so it has its own Makefile; PG_CONFIG is passed on so
# that both go to the same PostgreSQL.
all: pg_bsonexport
pg_bsonexport:
	$(MAKE) --no-print-directory -C exporter PG_CONFIG=$(PG_CONFIG)
install: install-pg_bsonexport
install-pg_bsonexport: pg_bsonexport
	$(MAKE) --no-print-directory -C exporter PG_CONFIG=$(PG_CONFIG) install
clean: clean-pg_bsonexport
clean-pg_bsonexport:
	$(MAKE) --no-print-directory -C exporter clean
.PHONY: pg_bsonexport install-pg_bsonexport clean-pg_bsonexport
