/*
 * citus_to.c
 *		pg_bsonstream --citus --to: the applier's process and the nodes'
 *		heartbeats (citus_to.h).
 *
 * Clocks: the merge orders two nodes' commits by their own clocks
 * (node_merge.h).  Before any slot is made, each node's clock is read a few
 * times against this machine's, the reading with the shortest round trip
 * kept, and its offset from the coordinator's compared: a difference over
 * MERGE_MAX_SKEW_MS (plus the round trips' uncertainty) is refused, with
 * the figures.  The check is at the start only: a clock that drifts later
 * is the operator's to keep in step (NTP, chrony), as for Citus itself.
 */
#include "citus_to.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common.h"
#include "db.h"
#include "node_merge.h"
#include "progress.h"
#include "signals.h"

#define CLOCK_READINGS	5

static double
wall_ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
}

/*
 * The node's clock minus this machine's, in ms, from the reading with the
 * shortest round trip (*rtt); -1 with err set on failure
 */
static int
clock_offset(const ConnOpts *conn, double *offset, double *rtt, char *err, size_t errsize)
{
	ConnOpts	plain = *conn;
	PGconn	   *c;

	plain.replication = NULL;
	if ((c = db_connect(&plain, err, errsize)) == NULL)
		return -1;
	*rtt = INFINITY;
	for (int i = 0; i < CLOCK_READINGS; i++)
	{
		double		t0 = wall_ms_now();
		PGresult   *res = PQexec(c, "SELECT extract(epoch FROM clock_timestamp())::float8 * 1000");
		double		t1 = wall_ms_now();

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			db_error(c, res, "could not read the node's clock", err, errsize);
			PQclear(res);
			PQfinish(c);
			return -1;
		}
		if (t1 - t0 < *rtt)
		{
			*rtt = t1 - t0;
			*offset = strtod(PQgetvalue(res, 0, 0), NULL) - (t0 + t1) / 2;
		}
		PQclear(res);
	}
	PQfinish(c);
	return 0;
}

/* The coordinator among the nodes: group 0 */
static int
coordinator(const CitusStreamNode *nodes, int n)
{
	for (int i = 0; i < n; i++)
		if (nodes[i].group == 0)
			return i;
	return 0;
}

/*
 * Every node's clock read against this machine's, with the coordinator's
 * shown as the reference; any two nodes (a shard moves between two
 * workers) may differ by at most MERGE_MAX_SKEW_MS beyond what the
 * readings' round trips leave unknown.  0, or -1 with err set.
 */
static int
check_clocks(const CitusStreamNode *nodes, int n, char *err, size_t errsize)
{
	int			co = coordinator(nodes, n);
	double	   *off = calloc(n, sizeof(double));
	double	   *rtt = calloc(n, sizeof(double));
	char		line[2048] = "";
	size_t		len = 0;
	int			rc = 0;

	if (off == NULL || rtt == NULL)
	{
		snprintf(err, errsize, "out of memory");
		free(off);
		free(rtt);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++)
	{
		char		why[1024];

		if (clock_offset(nodes[i].conn, &off[i], &rtt[i], why, sizeof(why)) != 0)
		{
			snprintf(err, errsize, "%s: %s", nodes[i].label, why);
			rc = -1;
		}
	}
	for (int i = 0; i < n && rc == 0; i++)
	{
		if (i != co && len < sizeof(line))
			len += (size_t) snprintf(line + len, sizeof(line) - len, "%s%s %+.1f ms",
									 len ? ", " : "", nodes[i].label, off[i] - off[co]);
		for (int j = i + 1; j < n && rc == 0; j++)
		{
			double		skew = off[j] - off[i];

			if (fabs(skew) - (rtt[i] + rtt[j]) / 2 > MERGE_MAX_SKEW_MS)
			{
				snprintf(err, errsize, "the clocks of %s and %s differ by %.1f ms (read with round "
						 "trips of %.1f and %.1f ms): the nodes' changes are applied in the order "
						 "of their commit times, and a shard's changes before and after a move "
						 "between them would be out of order\n"
						 "hint: Keep the nodes' clocks in step (NTP, chrony) to within %d ms of "
						 "each other.",
						 nodes[i].label, nodes[j].label, skew, rtt[i], rtt[j], MERGE_MAX_SKEW_MS);
				rc = -1;
			}
		}
	}
	if (rc == 0 && n > 1)
		fprintf(stderr, "pg_bsonstream: the nodes' clocks against the coordinator's: %s "
				"(at most %d ms between any two allowed)\n", line, MERGE_MAX_SKEW_MS);
	free(off);
	free(rtt);
	return rc;
}

/* dir/group-<group>/name */
static int
marker_there(const char *dir, int group, const char *name)
{
	char		g[4200];

	snprintf(g, sizeof(g), "%s/group-%d", dir, group);
	return marker_exists(g, name);
}

int
citus_apply_run(const CitusStreamNode *nodes, int n, const char *dir, const ApplyOptions *base,
				double status_interval, int quiet)
{
	ApplyOptions ao = *base;
	int		   *groups = calloc(n, sizeof(int));
	char		err[4096];
	char		system_id[32];
	char		dbname[256];
	int			rc;
	PGconn	   *coord;
	PGresult   *res;
	ConnOpts	plain;
	double		started;
	double		said = 0;
	ApplyStats	a;

	if (groups == NULL)
	{
		fprintf(stderr, "pg_bsonstream: error: out of memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++)
	{
		if (nodes[i].group < 0 || nodes[i].group > MERGE_MAX_GROUP)
		{
			fprintf(stderr, "pg_bsonstream: error: %s: --to merges the streams of nodes whose "
					"group ids are at most %d\n", nodes[i].label, MERGE_MAX_GROUP);
			free(groups);
			return 1;
		}
		groups[i] = nodes[i].group;
	}
	if (check_clocks(nodes, n, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		free(groups);
		return 1;
	}

	/* the cluster is the coordinator's: its system identifier, its database */
	plain = *nodes[coordinator(nodes, n)].conn;
	plain.replication = NULL;
	if ((coord = db_connect(&plain, err, sizeof(err))) == NULL)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		free(groups);
		return 1;
	}
	res = PQexec(coord, "SELECT system_identifier::text FROM pg_catalog.pg_control_system()");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		db_error(coord, res, "could not read the coordinator's system identifier", err, sizeof(err));
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		PQclear(res);
		PQfinish(coord);
		free(groups);
		return 1;
	}
	snprintf(system_id, sizeof(system_id), "%s", PQgetvalue(res, 0, 0));
	snprintf(dbname, sizeof(dbname), "%s", PQdb(coord));
	PQclear(res);
	PQfinish(coord);

	ao.system_id = system_id;
	ao.dir = dir;
	ao.groups = groups;
	ao.ngroups = n;
	if (ao.default_db == NULL)
		ao.default_db = dbname;
	rc = apply_open(&ao, err, sizeof(err));
	if (rc != 0)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		free(groups);
		return rc == -2 ? 2 : 1;
	}
	if (marker_write(dir, CITUS_TO_READY, err, sizeof(err)) != 0)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		apply_close();
		free(groups);
		return 1;
	}

	/* every node streaming, its first copy whole */
	for (int i = 0; i < n && !interrupted; i++)
		while (!marker_there(dir, groups[i], CITUS_NODE_READY) && !interrupted)
			usleep(100000);
	if (interrupted)
	{
		apply_close();
		free(groups);
		return 0;
	}
	if (apply_start(err, sizeof(err)) != 0)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		apply_close();
		free(groups);
		return 1;
	}
	started = now_seconds();
	rc = 0;
	while (!interrupted)
	{
		if (apply_failed(err, sizeof(err)))
		{
			rc = 1;
			break;
		}
		if (!quiet && status_interval > 0 && now_seconds() - said >= status_interval)
		{
			double		elapsed = now_seconds() - started;

			said = now_seconds();
			apply_stats(&a);
			if (a.state[0])
				fprintf(stderr, "pg_bsonstream: MongoDB: %s\n", a.state);
			else
				fprintf(stderr, "pg_bsonstream: applied %llu events (%.0f/s), %.1f s behind\n",
						(unsigned long long) a.events, elapsed > 0 ? a.events / elapsed : 0,
						a.caught_up || a.wall_ms == 0 ? 0.0 : wall_ms_now() / 1000.0 - a.wall_ms / 1000.0);
		}
		usleep(200000);
	}
	if (apply_stop(0, err, sizeof(err)) != 0)
		rc = 1;
	if (rc != 0)
	{
		fprintf(stderr, "pg_bsonstream: error: %s\n", err);
		fprintf(stderr, "pg_bsonstream: the changes not yet applied stay in \"%s/group-*/changes\"; "
				"the next run applies them\n", dir);
	}
	apply_stats(&a);
	if (!quiet)
		fprintf(stderr, "pg_bsonstream: MongoDB: %llu events applied%s%s, %llu refused\n",
				(unsigned long long) a.events, a.token[0] ? " up to " : "", a.token,
				(unsigned long long) a.refused);
	apply_close();
	free(groups);
	return rc;
}

static ConnOpts heartbeat_conn;
static atomic_int heartbeat_bad;

int
heartbeat_failed(void)
{
	return heartbeat_bad;
}

static void *
heartbeat_main(void *arg)
{
	PGconn	   *c = NULL;
	int			said_down = 0;
	sigset_t	all;

	(void) arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;)
	{
		char		err[2048];
		PGresult   *res;

		if (c == NULL && (c = db_connect(&heartbeat_conn, err, sizeof(err))) == NULL)
		{
			if (!said_down++)
				fprintf(stderr, "pg_bsonstream: warning: could not write heartbeats on this node "
						"(the nodes' changes wait for its stream when it is idle): %s\n", err);
			usleep((useconds_t) (HEARTBEAT_SECONDS * 1e6));
			continue;
		}
		res = PQexec(c, "SELECT pg_catalog.pg_logical_emit_message(true, 'bson_out.heartbeat', '')");
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

			db_error(c, res, "could not write a heartbeat on this node", err, sizeof(err));
			if (state && strcmp(state, "42501") == 0)
			{
				fprintf(stderr, "pg_bsonstream: error: %s\n"
						"hint: --citus --to writes a logical message on every node each second, "
						"so that the merge of the nodes' streams goes on when one is idle: "
						"GRANT EXECUTE ON FUNCTION pg_catalog.pg_logical_emit_message(boolean, "
						"text, text) TO the user of the stream, on every node.\n", err);
				PQclear(res);
				PQfinish(c);
				heartbeat_bad = 1;
				kill(getpid(), SIGTERM);
				return NULL;
			}
			if (!said_down++)
				fprintf(stderr, "pg_bsonstream: warning: %s\n", err);
			PQfinish(c);
			c = NULL;
		}
		else if (said_down)
		{
			fprintf(stderr, "pg_bsonstream: heartbeats written again on this node\n");
			said_down = 0;
		}
		PQclear(res);
		usleep((useconds_t) (HEARTBEAT_SECONDS * 1e6));
	}
	return NULL;
}

int
heartbeat_start(const ConnOpts *conn, char *err, size_t errsize)
{
	pthread_t	t;
	int			rc;

	heartbeat_conn = *conn;
	heartbeat_conn.replication = NULL;
	rc = pthread_create(&t, NULL, heartbeat_main, NULL);
	if (rc != 0)
	{
		snprintf(err, errsize, "could not start the heartbeats: %s", strerror(rc));
		return -1;
	}
	pthread_detach(t);
	return 0;
}

/*
 * After a node's slot is made for a first copy: the node's clock now, in
 * dir/MERGE_COPY_TIME (node_merge.h says why).  0, or -1 with err set.
 */
int
note_copy_time(const ConnOpts *conn, const char *dir, int sync, char *err, size_t errsize)
{
	ConnOpts	plain = *conn;
	PGconn	   *c;
	PGresult   *res;
	char		path[4300];
	char		ms[64];
	FILE	   *f;
	int			rc = 0;

	/* a plain session: no walsender taken from the node's max_wal_senders */
	plain.replication = NULL;
	if ((c = db_connect(&plain, err, errsize)) == NULL)
		return -1;
	res = PQexec(c, "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(c, res, "could not read the node's clock", err, errsize);
		PQclear(res);
		PQfinish(c);
		return -1;
	}
	snprintf(ms, sizeof(ms), "%s\n", PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);
	snprintf(path, sizeof(path), "%s/%s", dir, MERGE_COPY_TIME);
	if ((f = fopen(path, "w")) == NULL || fputs(ms, f) == EOF || fflush(f) != 0 ||
		(sync && fsync(fileno(f)) != 0))
		rc = -1;
	if (f && fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		snprintf(err, errsize, "could not write \"%s\": %s", path, strerror(errno));
	return rc;
}
