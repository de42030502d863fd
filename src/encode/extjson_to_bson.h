/*
 * extjson_to_bson.h
 *		MongoDB Extended JSON v2 wrappers ({"$oid": ...}, {"$date": ...}, ...)
 *		to native BSON types, for every JSON input path.
 *
 * The input walkers (jsonb in jsonb_to_bson.c, JSON text in json_to_bson.c) load a
 * nested object that may be a wrapper into the small EjValue form below and
 * hand it here; this module decides whether it is a wrapper, validates it
 * and writes the BSON value.  Wrappers are tiny, so loading them costs
 * little; plain documents are never loaded, only located again.
 */
#ifndef EXTJSON_TO_BSON_H
#define EXTJSON_TO_BSON_H

#include "bson_writer.h"

#include "utils/numeric.h"

typedef enum EjKind
{
	EJ_STRING,
	EJ_NUMBER,
	EJ_TRUE,
	EJ_FALSE,
	EJ_NULL,
	EJ_OBJECT,
	EJ_ARRAY
} EjKind;

typedef struct EjValue EjValue;

typedef struct EjField
{
	const char *key;			/* server encoding, no escapes left */
	int			keylen;
	EjValue    *value;
} EjField;

struct EjValue
{
	EjKind		kind;
	const char *str;			/* EJ_STRING: server encoding, may hold NUL */
	int			len;
	const char *numtext;		/* EJ_NUMBER from JSON text: its literal */
	int			numlen;
	Numeric		num;			/* EJ_NUMBER from jsonb */
	int			nfields;		/* EJ_OBJECT: loaded fields, or -1 if not */
	EjField    *fields;
	const void *source;			/* EJ_OBJECT, EJ_ARRAY: for the input walker */
	const char *locator;		/* where in the input, for error paths */
};

/*
 * Room for the EjValues of wrappers, reused from one wrapper to the next
 * (callers restore nvalues and nfields after each), so that loading a wrapper
 * costs no allocation; palloc only when a candidate is too big for it.
 */
#define EJ_ARENA_SIZE 32

typedef struct EjArena
{
	int			nvalues;
	int			nfields;
	EjValue		values[EJ_ARENA_SIZE];
	EjField		fields[EJ_ARENA_SIZE];
} EjArena;

static inline EjValue *
ej_new_value(EjArena *arena)
{
	EjValue    *v;

	if (arena->nvalues < EJ_ARENA_SIZE)
	{
		v = &arena->values[arena->nvalues++];
		memset(v, 0, sizeof(EjValue));
	}
	else
		v = palloc0(sizeof(EjValue));
	v->nfields = -1;
	return v;
}

static inline EjField *
ej_new_fields(EjArena *arena, int n)
{
	if (n <= EJ_ARENA_SIZE - arena->nfields)
	{
		arena->nfields += n;
		return &arena->fields[arena->nfields - n];
	}
	return palloc(sizeof(EjField) * n);
}

typedef struct BsonExtJsonInput
{
	BsonWriter *w;
	bool		legacy;			/* accept the legacy forms too */
	/* write ev, an object, as a complete embedded BSON document */
	void		(*write_document) (void *arg, const EjValue *ev);
	void	   *arg;
	const EjValue *current;		/* the wrapper being written, for errors */
	EjArena		arena;
} BsonExtJsonInput;

/* How deep wrapper candidates are loaded: {"$dbPointer": {"$id": {"$oid"}}} */
#define EJ_LOAD_DEPTH 3

/*
 * Is key (of a nested object) one that makes the object a wrapper?  A
 * "$regex" key counts only when its value is a string (value_is_string),
 * since {"$regex": {...}} is a query operator, not the legacy wrapper.
 */
extern bool bson_extjson_is_wrapper_key(const char *key, int keylen,
										bool value_is_string);

/*
 * The common wrappers of one key and a string ({"$oid": "..."}, {"$date":
 * "<ISO>"}, {"$numberInt"/"$numberLong"/"$numberDouble": "..."}), written
 * straight from the input walker's key and string without loading the
 * object: returns false, having written nothing, for any other key or a
 * string that does not parse; the caller then takes bson_extjson_write's
 * general path, which writes the value or raises the error with its path.
 * The caller has reserved BSON_SCALAR_VALSIZE bytes after the element
 * header (bson_key_deferred), which the fixed-size values written here use.
 */
extern bool bson_extjson_write_string_wrapper(BsonWriter *w, char *type_at,
											  const char *key, int keylen,
											  const char *str, int len);

/*
 * If obj (a loaded object) is a wrapper, store its BSON type at *type_at,
 * write its value and return true; return false for a plain document.
 * Raises 22P02, naming the wrapper and the path, for a malformed wrapper.
 * The caller has reserved BSON_SCALAR_VALSIZE bytes after the element
 * header; longer values reserve their own room.
 */
extern bool bson_extjson_write(BsonExtJsonInput *in, char *type_at,
							   const EjValue *obj);

#endif							/* EXTJSON_TO_BSON_H */
