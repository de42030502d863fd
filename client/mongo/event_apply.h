/*
 * event_apply.h
 *		How a change event is applied to a MongoDB collection: the apply
 *		table, in one place.
 *
 *	event                    write
 *	insert, replace          replace the document of documentKey._id by
 *	                         fullDocument, upsert
 *	update with fullDocument the same
 *	update without it        update one: $set updatedFields, $unset
 *	                         removedFields (no upsert: a document that is
 *	                         not there is not made up from some columns)
 *	delete                   delete one, documentKey
 *	truncate                 delete many: every document of the collection
 *	insert with              a key change whose old row the WAL does not
 *	  unchangedFields        hold: the delete just before it and this insert
 *	                         are applied together, the fields it names taken
 *	                         from the document the delete removes
 *	                         (mongo_apply.c)
 *	modify, drop             a DDL changed the table's documents: its
 *	                         collection copied again, or dropped
 *	                         (schema_follow.c)
 *	embeddedIn/embeddedFrom  a row embedded in its parent's document: the
 *	                         top document read, changed by the element's
 *	                         key and written whole (embed_apply.c); its own
 *	                         collection too where ownCollection says so
 *	embeddedFields           a parent's: its embedded fields kept when its
 *	                         columns are written (embed_apply.c)
 *
 * Events that cannot be applied say why (problem): a table without a
 * replica identity (no documentKey: its documents cannot be found again),
 * a truncate of some partitions only (their bounds are not in the event),
 * an update without fullDocument whose column names MongoDB would read as
 * paths (a "." or a leading "$").  The applier treats them as a refused
 * write: it stops, or writes them to the dead-letter file.
 *
 * A split event is merged before it is read here (event_merge_fragments).
 */
#ifndef EVENT_APPLY_H
#define EVENT_APPLY_H

#include <stdint.h>

#include <bson/bson.h>

#include "resume_token.h"

typedef enum
{
	APPLY_NOTHING,				/* an update that changes no column */
	APPLY_REPLACE,				/* replace one, upsert */
	APPLY_UPDATE,				/* update one */
	APPLY_DELETE,				/* delete one */
	APPLY_DELETE_ALL,			/* delete many: the whole collection, or the
								 * truncated partitions' documents */
	APPLY_KEY_CHANGE_INSERT,	/* replace, upsert, with the delete before */
	APPLY_SCHEMA,				/* modify or drop: schema_follow.c */
	APPLY_EMBEDDED,				/* a row embedded in its parent's document
								 * (embed_apply.c): into the top document's
								 * collection */
	APPLY_REFUSED				/* cannot be applied: see problem */
} ApplyKind;

typedef struct ApplyEvent
{
	ApplyKind	kind;
	char		token[RESUME_TOKEN_LEN + 1];
	char		db[128];
	char		coll[512];
	int64_t		wall_ms;		/* wallTime, 0 if absent */
	/* allocated (bson_new): an ApplyEvent may be copied by value, a bson_t not */
	bson_t	   *selector;		/* {_id: key}; for a truncate empty, or the
								 * partitions' filter */
	bson_t	   *doc;			/* the replacement, or the update's operators */
	bson_t	   *unchanged;		/* key change: the field names, as an array */
	char		problem[1024];	/* APPLY_REFUSED: why */
	/* APPLY_SCHEMA: operationDescription */
	int64_t		relid;
	char		table[600];		/* schema.table */
	char	   *shape;			/* malloc'ed; NULL: a drop */
	/* embedded rows (embed_apply.c); NULL where the event has none */
	bson_t	   *embed_in;		/* embeddedIn: where the row is now */
	bson_t	   *embed_from;		/* embeddedFrom: where it was */
	bson_t	   *fields;			/* a parent's embeddedFields */
	int			embed_own;		/* the row's own collection is written too */
} ApplyEvent;

/*
 * Read one (merged) event; 0, or -1 with err set when it is no event of
 * the plugin (a damaged segment).  ev's bson_t are allocated here;
 * event_apply_free frees them.
 */
extern int	event_apply_read(const uint8_t *data, uint32_t len, ApplyEvent *ev,
							 char *err, size_t errsize);
extern void event_apply_free(ApplyEvent *ev);

/*
 * The write into the top document's collection of an event of an embedded
 * row (embed_in or embed_from set): kind APPLY_EMBEDDED, ns the top
 * collection's, selector {_id: the top document's}, into out (allocated
 * here); 0, or -1 if the event's embedded fields are damaged.
 */
extern int	event_apply_embedded(const ApplyEvent *ev, ApplyEvent *out);

/*
 * The fragments of a split event, in order: one event with the fields of
 * each (the last fragment's _id, no splitEvent), into merged.
 */
extern void event_merge_fragments(const bson_t *fragments, int n, bson_t *merged);

/* The splitEvent of an event: 0 if not a fragment, else fragment and of */
extern int	event_split_info(const uint8_t *data, uint32_t len, int *fragment, int *of);

/*
 * The document a key change writes: the new row (fullDocument) with the
 * fields unchanged names taken from old (the document the delete removes),
 * in old's order of fields, so that the columns keep their order; fields
 * of the new row that old lacks come after.  Returns how many of the
 * unchanged fields old did not have.
 */
extern int	event_key_change_document(const bson_t *newdoc, const bson_t *unchanged,
									  const bson_t *old, bson_t *out);

/*
 * A key change's insert event as it is written: its fullDocument replaced
 * by doc (the fields taken from the old document added), without
 * unchangedFields; for the dead-letter file, which must hold what was
 * refused.  Allocated (bson_new); NULL if the event cannot be read.
 */
extern bson_t *event_with_document(const uint8_t *event, uint32_t len, const bson_t *doc);

#endif							/* EVENT_APPLY_H */
