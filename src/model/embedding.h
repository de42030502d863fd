/*
 * embedding.h
 *		Child tables embedded in their parent's document: the declarations
 *		(the extension's table bson_embedding, changed only by bson_embed()
 *		and bson_unembed(), which check them here), and what the document
 *		model needs of them.
 *
 * A declaration says: the rows of table child whose foreign key (a
 * constraint of child that references parent) points at a row of parent are
 * written inside that row's document, as field, an array of elements
 * ordered by child's key (one-to-many) or one sub-document (one-to-one:
 * the foreign key's columns are unique in child).  An element is the
 * child's row without _id: its columns (declared, or all but the foreign
 * key's) as row_to_bson maps them, then its own embedded fields.  Embedded
 * fields follow the parent's columns, ordered by field name.
 *
 * The rules that keep every change exact (checked at each use, since the
 * tables can change after a declaration):
 *	- the foreign key references the parent's key (its _id), so that a
 *	  child's row names its parent's document without a lookup;
 *	- the child has a key, and the element's key (the child's key columns
 *	  that are not the foreign key's) is in its elements, of a type whose
 *	  order MongoDB and PostgreSQL share (elements are in that order);
 *	- below the top, the parent's key includes its own foreign key, so that
 *	  a row at any depth names the top document;
 *	- the child's replica identity logs the old foreign key (an identity
 *	  index that includes it, or FULL), so that a move is seen;
 *	- no cycle, at most BSON_EMBED_MAX_DEPTH levels below a top table.
 */
#ifndef EMBEDDING_H
#define EMBEDDING_H

#include "bson_compat.h"

#include "nodes/pg_list.h"
#include "utils/rel.h"

#include "change_to_bson.h"

#define BSON_EMBED_MAX_DEPTH 4

/* One declaration, resolved against the catalogs */
typedef struct BsonEmbedding
{
	Oid			child;
	Oid			parent;
	char	   *constraint_name;
	char	   *field;
	bool		array;			/* else one sub-document */
	bool		keep_collection;	/* the child's own collection too */
	int			nfk;			/* the foreign key's columns */
	AttrNumber *fk;				/* of child, in the parent's key order */
	AttrNumber *ref;			/* of parent, the same order: its key */
	int			nelement_key;	/* arrays: the element's key, child's
								 * columns in the key's order */
	AttrNumber *element_key;
	bool	   *included;		/* by child's attnum - 1: in the element */
	int			natts;			/* child's columns (included's length) */
} BsonEmbedding;

/*
 * Every declaration (a List of BsonEmbedding *), resolved and checked, in
 * the current memory context; nsp is the extension's schema.  A declaration
 * that no longer holds (its constraint dropped, its key changed) is an
 * error that names it and how to fix or remove it.
 */
extern List *bson_embeddings_load(Oid nsp);

/*
 * The same where the extension is installed in the database (its schema
 * found in pg_extension), else NIL: for the output plugin, which may
 * decode a database without it
 */
extern List *bson_embeddings_load_any(void);

/*
 * Those that apply where partitions are collections of their own or not:
 * without partition_root, none whose chain holds a partitioned table (its
 * partitions are collections of their own, with their rows)
 */
extern List *bson_embeddings_for(List *embeddings, bool partition_root);

/* Those of embeddings whose parent is table, ordered by field */
extern List *bson_embeddings_into(List *embeddings, Oid table);

/* The declaration of child, or NULL */
extern BsonEmbedding *bson_embedding_of(List *embeddings, Oid child);

/*
 * The query that reads the documents of table (read as source, a
 * partition or table itself) with their embedded fields, set-based: one
 * grouped pass over each child table, joined on the foreign key.  schema
 * is the extension's, quoted.
 */
extern char *bson_embedded_query(List *embeddings, Oid table, const char *source,
								 const char *schema, bool omit_nulls,
								 bool partition_root);

/*
 * The query that gives one document's embedded fields, as a bytea[] in
 * field order, for the parent whose key columns are $1..$n (in the order
 * of ref of table's embeddings).
 */
extern char *bson_embedded_fields_query(List *embeddings, Oid table,
										const char *schema, bool omit_nulls,
										bool partition_root);

/*
 * Append the embedded fields of a document to w's open document: values
 * are the embedding's field bytes (an array's elements as one BSON array
 * document, or a sub-document), in field order, NULL where there is none.
 */
struct BsonWriter;
extern void bson_append_embedded_fields(struct BsonWriter *w, List *into,
										Datum *values, bool *nulls,
										int nvalues, bool omit_nulls);

/*
 * What table's change events say of embedded rows, into t (allocated in
 * mcxt): where its rows go (t->embed, the top collection named in db as
 * include_schema says), and its documents' (or elements') embedded fields
 * (t->embedded, t->embedded_shape).  Returns the top table whose documents
 * hold its rows, InvalidOid if they are its own.
 */
extern Oid	bson_embedding_model(List *embeddings, Oid table, BsonChangeTable *t,
								 const char *db, bool include_schema,
								 MemoryContext mcxt);

/*
 * The shape of table's embedded fields, as JSON, for a consumer that
 * follows them (NULL when none):
 *	[{"field":"lines","table":"public.order_lines","shape":"array",
 *	  "parent_key":["order_id"],"element_key":["line_no"],"fields":[...]}]
 */
extern char *bson_embedded_shape(List *embeddings, Oid table);

#endif							/* EMBEDDING_H */
