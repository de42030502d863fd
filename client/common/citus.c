/*
 * citus.c
 *		Where a Citus table's shards are (see citus.h).
 */
#include "citus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "db.h"

/* A query of the catalogs; NULL with err set. */
static PGresult *
query(PGconn *conn, const char *sql, const char *oid, char *err, size_t errsize)
{
	const char *params[1] = {oid};
	PGresult   *res = PQexecParams(conn, sql, oid ? 1 : 0, NULL, oid ? params : NULL,
								   NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, "could not read Citus's catalogs", err, errsize);
		PQclear(res);
		return NULL;
	}
	return res;
}

/*
 * The node's index in t->nodes, added if new.  The coordinator (group 0)
 * is reached where the leader connection reached it: its pg_dist_node name
 * is often "localhost", which means this client's own machine.
 */
static int
node_index(CitusTable *t, PGconn *leader, const char *name, const char *port, int coordinator)
{
	CitusNode  *n;
	int			i;

	for (i = 0; i < t->nnodes; i++)
		if (strcmp(t->nodes[i].name, name) == 0 && strcmp(t->nodes[i].port, port) == 0)
			return i;
	n = &t->nodes[t->nnodes];
	n->name = strdup(name);
	n->port = strdup(port);
	if (n->name == NULL || n->port == NULL)
	{
		free(n->name);
		free(n->port);
		n->name = n->port = NULL;
		return -1;
	}
	n->host = coordinator ? PQhost(leader) : n->name;
	n->conn_port = coordinator ? PQport(leader) : n->port;
	return t->nnodes++;
}

int
citus_lookup(PGconn *conn, const char *oid, CitusTable *t, char *err, size_t errsize)
{
	PGresult   *res;
	int			i;

	memset(t, 0, sizeof(*t));
	res = query(conn, "SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'",
				NULL, err, errsize);
	if (res == NULL)
		return -1;
	i = PQntuples(res);
	PQclear(res);
	if (i == 0)
		return 0;

	/*
	 * Every table Citus knows has its rows in shards: hash-distributed
	 * ('h'), reference tables and the coordinator's Citus local tables
	 * ('n'), and the older range and append methods.
	 */
	res = query(conn,
				"SELECT p.repmodel = 't', pg_catalog.pg_relation_size(p.logicalrelid) "
				"FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1::oid",
				oid, err, errsize);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		return 0;
	}
	t->reference = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	t->local_bytes = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	PQclear(res);

	/*
	 * One active placement per shard, on a primary: a worker's rather than
	 * the coordinator's (group 0) where there is a choice, as for a
	 * reference table.  shard_name() knows how Citus shortens long names;
	 * it leaves public's unqualified, and a worker's search_path must not
	 * decide which table is read.
	 */
	res = query(conn,
				"SELECT s.shardid, "
				"       CASE WHEN n.nspname = 'public' THEN 'public.' ELSE '' END "
				"       || pg_catalog.shard_name(s.logicalrelid, s.shardid), "
				"       pl.nodename, pl.nodeport, pl.groupid = 0 "
				"FROM pg_catalog.pg_dist_shard s "
				"JOIN pg_catalog.pg_class c ON c.oid = s.logicalrelid "
				"JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
				"LEFT JOIN LATERAL ("
				"    SELECT d.nodename, d.nodeport::text, d.groupid FROM pg_catalog.pg_dist_placement p "
				"    JOIN pg_catalog.pg_dist_node d ON d.groupid = p.groupid "
				"    WHERE p.shardid = s.shardid AND p.shardstate = 1 "
				"      AND d.isactive AND d.noderole = 'primary' "
				"    ORDER BY d.groupid = 0, d.nodeid LIMIT 1) pl ON true "
				"WHERE s.logicalrelid = $1::oid "
				"ORDER BY CASE WHEN s.shardminvalue ~ '^-?[0-9]+$' "
				"         THEN s.shardminvalue::numeric END NULLS FIRST, s.shardid",
				oid, err, errsize);
	if (res == NULL)
		return -1;
	t->nshards = PQntuples(res);
	t->shards = calloc(t->nshards ? t->nshards : 1, sizeof(CitusShard));
	t->nodes = calloc(t->nshards ? t->nshards : 1, sizeof(CitusNode));
	if (t->shards == NULL || t->nodes == NULL)
		goto oom;
	for (i = 0; i < t->nshards; i++)
	{
		CitusShard *s = &t->shards[i];

		if (PQgetisnull(res, i, 2))
		{
			snprintf(err, errsize, "shard %s of the table has no active placement on a "
					 "primary node\nhint: check pg_dist_placement and pg_dist_node on the "
					 "coordinator", PQgetvalue(res, i, 0));
			PQclear(res);
			citus_free(t);
			return -1;
		}
		s->shardid = strdup(PQgetvalue(res, i, 0));
		s->table = strdup(PQgetvalue(res, i, 1));
		s->node = node_index(t, conn, PQgetvalue(res, i, 2), PQgetvalue(res, i, 3),
							 strcmp(PQgetvalue(res, i, 4), "t") == 0);
		if (s->shardid == NULL || s->table == NULL || s->node < 0)
			goto oom;
	}
	PQclear(res);
	return 1;

oom:
	PQclear(res);
	citus_free(t);
	snprintf(err, errsize, "out of memory");
	return -1;
}

/* "NAME[:PORT]" (of length len) into *name and *port (NULL if none); malloc'ed. */
static int
split_port(const char *s, size_t len, char **name, char **port)
{
	const char *colon = memchr(s, ':', len);
	size_t		plen = 0;

	*port = NULL;
	/* one colon followed by digits only: a port (an IPv6 address has more) */
	if (colon)
	{
		plen = len - (size_t) (colon + 1 - s);
		if (plen == 0 || memchr(colon + 1, ':', plen) != NULL ||
			strspn(colon + 1, "0123456789") < plen)
			colon = NULL;
	}
	if (colon)
	{
		*port = strndup(colon + 1, plen);
		len = (size_t) (colon - s);
	}
	*name = strndup(s, len);
	return *name == NULL || (colon && *port == NULL) ? -1 : 0;
}

/* One --worker-host mapping, split; the four strings malloc'ed (ports NULL if not given) */
static int
parse_map(const char *map, char **from, char **from_port, char **to, char **to_port,
		  char *err, size_t errsize)
{
	const char *eq = strchr(map, '=');

	*from = *from_port = *to = *to_port = NULL;
	if (eq == NULL || eq == map || eq[1] == '\0')
	{
		snprintf(err, errsize, "invalid --worker-host \"%s\": give NAME[:PORT]=HOST[:PORT], "
				 "NAME as the coordinator's pg_dist_node knows it", map);
		return -1;
	}
	if (split_port(map, (size_t) (eq - map), from, from_port) != 0 ||
		split_port(eq + 1, strlen(eq + 1), to, to_port) != 0)
	{
		free(*from);
		free(*from_port);
		free(*to);
		free(*to_port);
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	return 0;
}

/* Does a mapping from NAME[:PORT] name the node Citus knows as name:port? */
static int
map_names(const char *from, const char *from_port, const char *name, const char *port)
{
	return strcmp(name, from) == 0 && (from_port == NULL || strcmp(port, from_port) == 0);
}

int
citus_map_nodes(CitusTable *t, char *const *maps, int nmaps, char *err, size_t errsize)
{
	int			m;

	for (m = 0; m < nmaps; m++)
	{
		char	   *from;
		char	   *from_port;
		char	   *to;
		char	   *to_port;
		int			matched = 0;
		int			i;

		if (parse_map(maps[m], &from, &from_port, &to, &to_port, err, errsize) != 0)
			return -1;
		for (i = 0; i < t->nnodes; i++)
		{
			CitusNode  *n = &t->nodes[i];

			if (!map_names(from, from_port, n->name, n->port))
				continue;
			n->host = to;
			if (to_port)
				n->conn_port = to_port;
			matched++;
		}
		if (matched == 0)
			fprintf(stderr, "%s: warning: --worker-host \"%s\" matches no node "
					"holding the table's shards (pg_dist_node names them as NAME:PORT in -v's "
					"lines)\n", progname, maps[m]);
		/* 'to' and 'to_port' stay while the nodes use them: until the program ends */
		free(from);
		free(from_port);
	}
	return 0;
}

int
citus_map_node(char *const *maps, int nmaps, const char *name, const char *port,
			   char **host, char **conn_port, char *err, size_t errsize)
{
	int			m;

	*host = *conn_port = NULL;
	for (m = 0; m < nmaps; m++)
	{
		char	   *from;
		char	   *from_port;
		char	   *to;
		char	   *to_port;
		int			match;

		if (parse_map(maps[m], &from, &from_port, &to, &to_port, err, errsize) != 0)
			return -1;
		match = map_names(from, from_port, name, port);
		free(from);
		free(from_port);
		if (match)
		{
			*host = to;
			*conn_port = to_port;
			return 1;
		}
		free(to);
		free(to_port);
	}
	return 0;
}

void
citus_free(CitusTable *t)
{
	int			i;

	for (i = 0; t->shards && i < t->nshards; i++)
	{
		free(t->shards[i].shardid);
		free(t->shards[i].table);
	}
	for (i = 0; t->nodes && i < t->nnodes; i++)
	{
		free(t->nodes[i].name);
		free(t->nodes[i].port);
	}
	free(t->shards);
	free(t->nodes);
	memset(t, 0, sizeof(*t));
}
