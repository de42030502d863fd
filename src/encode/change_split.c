/*
 * change_split.c
 *		A change event too large for MongoDB cut into fragments, as
 *		MongoDB's $changeStreamSplitLargeEvent cuts one: by top-level field,
 *		never inside one, each fragment with its own resume token and
 *		splitEvent: {fragment, of}.  A consumer puts the event together
 *		again by merging the fragments' fields in order.
 */
#include "change_split.h"

#include "miscadmin.h"

#include "bson_reader.h"
#include "change_to_bson.h"
#include "resume_token.h"

/* {_id: {_data: token}} and {splitEvent: {fragment: int32, of: int32}} */
#define FRAGMENT_ID_SIZE \
	(1 + 4 + 4 + (1 + 6 + 4 + RESUME_TOKEN_LEN + 1) + 1)
#define FRAGMENT_SPLIT_SIZE \
	(1 + 11 + 4 + (1 + 9 + 4) + (1 + 3 + 4) + 1)
/* a fragment without its fields: length, _id, splitEvent, the final NUL */
#define FRAGMENT_OVERHEAD	(4 + FRAGMENT_ID_SIZE + FRAGMENT_SPLIT_SIZE + 1)

void
bson_event_split(BsonEventSplit *split, const char *event, Size len,
				 Size limit)
{
	BsonIter	it;
	int			n = 0;
	Size		fragment_size = 0;

	Assert(len == (Size) bsonr_u32((const uint8_t *) event));
	(void) len;
	split->event = event;
	split->oversized = -1;
	split->oversized_size = 0;

	/* the top-level fields, counted first to size the arrays */
	bson_iter_init(&it, (const uint8_t *) event);
	while (bson_iter_next(&it))
		n++;
	split->field_start = palloc(sizeof(Size) * (n + 1));
	split->field_name = palloc(sizeof(char *) * Max(n, 1));
	split->first_field = palloc(sizeof(int) * (n + 1));
	split->nfields = 0;
	bson_iter_init(&it, (const uint8_t *) event);
	while (bson_iter_next(&it))
	{
		CHECK_FOR_INTERRUPTS();
		if (it.pos == (const uint8_t *) event + 4)
			continue;			/* _id: each fragment has its own */
		split->field_start[split->nfields] = (const char *) it.pos - event;
		split->field_name[split->nfields] = it.key;
		split->nfields++;
	}
	split->field_start[split->nfields] = (const char *) it.end - event;

	/* greedily: as many fields into each fragment as fit, in order */
	split->nfragments = 0;
	for (int i = 0; i < split->nfields; i++)
	{
		Size		size = split->field_start[i + 1] - split->field_start[i];

		if (split->nfragments == 0 || fragment_size + size > limit)
		{
			split->first_field[split->nfragments++] = i;
			fragment_size = FRAGMENT_OVERHEAD;
		}
		fragment_size += size;
		if (fragment_size > limit && split->oversized < 0)
		{
			split->oversized = i;
			split->oversized_size = fragment_size;
		}
	}
	split->first_field[split->nfragments] = split->nfields;
}

bytea *
bson_event_fragment(const BsonEventSplit *split, int n, uint64 commit_lsn,
					uint64 position)
{
	Size		from = split->field_start[split->first_field[n - 1]];
	Size		to = split->field_start[split->first_field[n]];
	BsonWriter	w;
	Size		doc;
	Size		sub;

	Assert(n >= 1 && n <= split->nfragments);
	bson_writer_init(&w, FRAGMENT_OVERHEAD + (to - from));
	/* the plugin's limit is max-event-size, checked by the plan */
	w.max_size = (Size) BSON_MAX_DOCUMENT_SIZE;
	doc = bson_open(&w);
	bson_change_append_id(&w, commit_lsn, position);
	sub = bson_append_document_begin(&w, "splitEvent", 10);
	bson_append_int32(&w, "fragment", 8, (int32) n);
	bson_append_int32(&w, "of", 2, (int32) split->nfragments);
	bson_close(&w, sub);
	bson_put_raw(&w, split->event + from, to - from);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}
