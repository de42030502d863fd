# bson_out: PostgreSQL data to BSON.  PGXS build.

EXTENSION = bson_out
EXTVERSION = 1.3.0

MODULE_big = bson_out
# src/core: plain C, no PostgreSQL (also built by fuzz/ and test/unit/);
# src/common: what both directions share inside the server;
# src/encode: PostgreSQL values -> BSON; src/decode: BSON -> PostgreSQL values;
# src/model: the document model (a table's collection, selection, _id and
# document), which the output plugin and the SQL functions for the programs
# share; src/stream: the logical decoding output plugin (_PG_output_plugin_init),
# whose change events src/encode/change_to_bson.c writes.
OBJS = \
	src/bson_out.o \
	src/core/bson_reader.o \
	src/core/decimal128.o \
	src/core/extjson_scalars.o \
	src/common/bson_encoding.o \
	src/common/error_path.o \
	src/encode/bson_writer.o \
	src/encode/change_split.o \
	src/encode/change_to_bson.o \
	src/encode/extjson_to_bson.o \
	src/encode/json_to_bson.o \
	src/encode/jsonb_to_bson.o \
	src/encode/numeric_to_bson.o \
	src/encode/record_to_bson.o \
	src/decode/bson_decode.o \
	src/decode/bson_to_json.o \
	src/decode/bson_to_jsonb.o \
	src/model/citus_tables.o \
	src/model/collection_metadata.o \
	src/model/collection_rivals.o \
	src/model/collections.o \
	src/model/duplicate_ids.o \
	src/model/embedded_document.o \
	src/model/embedding.o \
	src/model/partition_filter.o \
	src/model/row_document.o \
	src/model/table_model.o \
	src/model/table_patterns.o \
	src/stream/output_plugin.o \
	src/stream/stream_options.o \
	src/stream/stream_tables.o

# The install script of the current release; each later release adds its
# own install script and the upgrade script from the one before, so that
# every release can still be installed and updated (test/sql/upgrade.sql).
DATA = $(wildcard $(EXTENSION)--*.sql)

# Tests that run in the UTF8 database; the encoding tests run in their own
# databases (installcheck-encodings below).  The stream_* tests need a server
# with wal_level = logical that lets bson_out be an output plugin
# (output_plugin_libraries, where the server has it): scripts/test.sh starts
# its cluster so.
REGRESS = encode_types encode_numbers encode_doubles encode_strings encode_structure \
	encode_errors encode_fast_path settings encode_json_text encode_extjson encode_rows \
	encode_rows_cancel encode_numeric_infinity encode_unmappable decode decode_invalid upgrade \
	stream_events stream_options stream_values stream_split stream_origin model model_checks \
	partition_truncate stream_schema embed
REGRESS_OPTS = --inputdir=test --outputdir=test --load-extension=$(EXTENSION)

# Our code compiles cleanly with -Wextra; PostgreSQL's own headers do not
# (unused parameters in inline functions), so they are included as system
# headers.
PG_CFLAGS = -Wall -Wextra
PG_CPPFLAGS = -Isrc/core -Isrc/common -Isrc/encode -Isrc/decode -Isrc/model -Isrc/stream \
	-isystem $(shell $(PG_CONFIG) --includedir-server)
EXTRA_CLEAN = test/results test/regression.diffs test/regression.out results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies unless PostgreSQL was configured with
# --enable-depend; the headers are few, so every object depends on all.
$(OBJS): $(wildcard src/*/*.h)

# The encoding tests, each in a database of its encoding.
installcheck-encodings: installcheck-latin1 installcheck-sql-ascii installcheck-win1252

installcheck-latin1:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=LATIN1 --dbname=bson_out_latin1 encoding_latin1

installcheck-sql-ascii:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=SQL_ASCII --dbname=bson_out_sql_ascii encoding_sql_ascii

installcheck-win1252:
	$(pg_regress_installcheck) $(REGRESS_OPTS) --encoding=WIN1252 --dbname=bson_out_win1252 encoding_win1252

.PHONY: installcheck-encodings installcheck-latin1 installcheck-sql-ascii installcheck-win1252

# The client programs (client/): pg_bsonexport, the exporter, and
# pg_bsonstream, the change streamer, built, installed, uninstalled and
# cleaned with the extension.  They are libpq clients, not part of the server
# module, so they have their own Makefile; PG_CONFIG and the libpq include
# directory are passed on so that both go to the same PostgreSQL.
#
# The extension needs only the server's headers; the programs also need
# libpq's (libpq-dev on Debian), which a server-only setup may lack.  Then
# both are skipped with a message naming them rather than failing the build.
# libpq-fe.h is looked for where client/Makefile takes libpq from,
# pg_config --includedir; LIBPQ_INCLUDEDIR=DIR overrides that (for both).
ifndef LIBPQ_INCLUDEDIR
LIBPQ_INCLUDEDIR := $(shell $(PG_CONFIG) --includedir)
endif
CLIENT_MAKE = $(MAKE) --no-print-directory -C client PG_CONFIG=$(PG_CONFIG) \
	LIBPQ_INCLUDEDIR=$(LIBPQ_INCLUDEDIR)
CLIENT_PROGRAMS = pg_bsonexport pg_bsonstream

ifneq ($(wildcard $(LIBPQ_INCLUDEDIR)/libpq-fe.h),)
all: client-programs
client-programs:
	$(CLIENT_MAKE)
install: install-client-programs
install-client-programs: client-programs
	$(CLIENT_MAKE) install
else
all: skip-client-programs
install: skip-client-programs
skip-client-programs:
	@echo "$(CLIENT_PROGRAMS) skipped: libpq-fe.h not found in $(LIBPQ_INCLUDEDIR) (install libpq's headers, e.g. libpq-dev)"
endif
uninstall: uninstall-client-programs
uninstall-client-programs:
	$(MAKE) --no-print-directory -C client PG_CONFIG=$(PG_CONFIG) uninstall
clean: clean-client-programs
clean-client-programs:
	$(MAKE) --no-print-directory -C client clean
.PHONY: client-programs install-client-programs skip-client-programs \
	uninstall-client-programs clean-client-programs

# The PGXN distribution (META.json): git's HEAD, so the committed files and
# no build outputs, as bson_out-VERSION.zip with one top directory
# bson_out-VERSION/, which `pgxn install ./bson_out-VERSION.zip` builds and
# installs.
DISTNAME = $(EXTENSION)-$(EXTVERSION)
dist:
	git archive --format=zip --prefix=$(DISTNAME)/ --output=$(DISTNAME).zip HEAD
.PHONY: dist
