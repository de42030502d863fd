/*
 * citus_stream.c
 *		pg_bsonstream --citus: one stream per node of a Citus cluster, each
 *		in a process of its own (see citus_stream.h).
 *
 * The parent connects to the coordinator only to read the node list, and
 * holds no connection in between, so that a child it forks inherits none.
 * Each child runs the single-node stream with its standard error in a pipe;
 * the parent writes the children's lines to its own standard error, each
 * led by the node it is about.  A child dies with the parent
 * (PR_SET_PDEATHSIG): a kill -9 of the parent is a kill -9 of every stream,
 * which the next run resumes from each node's slot, as after one node's.
 */
#define _GNU_SOURCE
#include "citus_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "citus.h"
#include "common.h"
#include "signals.h"

#define NODE_POLL_SECONDS	10.0	/* the node list is read again this often */
#define MAX_NODES			256

typedef struct NodeStream
{
	int			group;			/* pg_dist_node.groupid: 0 the coordinator */
	char		label[300];		/* "group G (host:port)", for messages */
	ConnOpts	conn;
	char	   *host;			/* conn's strings, malloc'ed */
	char	   *port;
	char	   *dir;
	char	   *node_name;		/* pg_dist_node's name and port when started */
	char	   *node_port;
	int			said_moved;		/* a new address in pg_dist_node was reported */
	int			in_metadata;	/* listed at the last reading */
	int			said_gone;		/* its leaving the metadata was reported */
	pid_t		pid;			/* 0 before the start and after the end */
	int			fd;				/* the child's standard error, or -1 */
	char		buf[8192];		/* a line not yet complete */
	size_t		len;
	int			status;			/* waitpid's, once ended */
	int			ended;
} NodeStream;

typedef struct Cluster
{
	const ConnOpts *coord;
	char	   *const *maps;
	int			nmaps;
	const char *dir;
	NodeStream	nodes[MAX_NODES];
	int			nnodes;
	CitusApply	apply;			/* --to: the applier, or NULL */
	NodeStream	applier;		/* its process (group -1) */
	int			applier_nodes;	/* the nodes it was told of: nodes[0..n-1] */
} Cluster;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static NodeStream *
find_group(Cluster *c, int group)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].group == group)
			return &c->nodes[i];
	return NULL;
}

/*
 * A node's connection: the coordinator's as the user gave it; a worker's
 * with the host and port pg_dist_node has (or --worker-host's), the rest
 * (database, user, a conninfo string's other settings) the coordinator's.
 */
static int
node_conn(Cluster *c, NodeStream *n, const char *name, const char *port,
		  char *err, size_t errsize)
{
	char	   *host = NULL;
	char	   *conn_port = NULL;

	n->conn = *c->coord;
	if (n->group == 0)
	{
		snprintf(n->label, sizeof(n->label), "group 0 (the coordinator)");
		return 0;
	}
	if (citus_map_node(c->maps, c->nmaps, name, port, &host, &conn_port, err, errsize) < 0)
		return -1;
	n->host = host ? host : strdup(name);
	n->port = conn_port ? conn_port : strdup(port);
	if (n->host == NULL || n->port == NULL)
	{
		snprintf(err, errsize, "out of memory");
		return -1;
	}
	n->conn.host = n->host;
	n->conn.port = n->port;
	snprintf(n->label, sizeof(n->label), "group %d (%s:%s)", n->group, name, port);
	return 0;
}

/*
 * Read the primary nodes from the coordinator: every group not known yet is
 * added (not started), and each known one marked listed or not.  The
 * coordinator is group 0 whether it is in pg_dist_node or not: its local
 * tables are streamed from it.  Returns 0, or -1 with err set.
 */
static int
read_nodes(Cluster *c, int *added, char *err, size_t errsize)
{
	PGconn	   *conn;
	PGresult   *res;
	int			ok = 0;
	int			was_listed[MAX_NODES];
	int			known = c->nnodes;

	*added = 0;
	for (int i = 0; i < known; i++)
		was_listed[i] = c->nodes[i].in_metadata;
	conn = db_connect(c->coord, err, errsize);
	if (conn == NULL)
		return -1;
	/* a coordinator that does not answer must not hold up the children's output */
	res = PQexec(conn,
				 "SELECT (SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'citus'), "
				 "  pg_catalog.set_config('statement_timeout', '30s', false)");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, "could not read the cluster's nodes", err, errsize);
		goto fail;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "0") == 0)
	{
		snprintf(err, errsize, "--citus: the database \"%s\" has no citus extension\n"
				 "hint: Without --citus, pg_bsonstream streams the one server it connects to.",
				 PQdb(conn));
		goto fail;
	}
	PQclear(res);

	/*
	 * A reference table's changes are streamed from the coordinator's copy
	 * (src/model/citus_tables.h): without the coordinator in the metadata
	 * it has none, and they would be streamed from nowhere.
	 */
	res = PQexec(conn,
				 "SELECT n.groupid, n.nodename, n.nodeport::text FROM pg_catalog.pg_dist_node n "
				 "WHERE n.noderole = 'primary' AND n.isactive "
				 "UNION ALL "
				 "SELECT 0, '', '' WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node "
				 "  WHERE groupid = 0) AND EXISTS (SELECT FROM pg_catalog.pg_dist_partition "
				 "  WHERE partmethod = 'n' AND repmodel = 't') "
				 "ORDER BY 1");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		db_error(conn, res, "could not read the cluster's nodes", err, errsize);
		goto fail;
	}
	for (int i = 0; i < PQntuples(res); i++)
		if (atoi(PQgetvalue(res, i, 0)) == 0 && PQgetvalue(res, i, 1)[0] == '\0')
		{
			snprintf(err, errsize, "--citus: the coordinator is not in the cluster's metadata, "
					 "and reference tables' changes are streamed from the coordinator's copy\n"
					 "hint: Add it with SELECT citus_set_coordinator_host('<its host>', <its port>);");
			goto fail;
		}
	for (int i = 0; i < c->nnodes; i++)
		c->nodes[i].in_metadata = c->nodes[i].group == 0;
	for (int i = 0; i < PQntuples(res); i++)
	{
		int			group = atoi(PQgetvalue(res, i, 0));
		NodeStream *n = find_group(c, group);

		if (n == NULL)
		{
			char		path[4200];

			if (c->nnodes == MAX_NODES)
			{
				snprintf(err, errsize, "--citus: more than %d nodes", MAX_NODES);
				goto fail;
			}
			n = &c->nodes[c->nnodes];
			memset(n, 0, sizeof(*n));
			n->group = group;
			n->fd = -1;
			if (node_conn(c, n, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2), err, errsize) != 0)
				goto fail;
			snprintf(path, sizeof(path), "%s/group-%d", c->dir, group);
			if ((n->dir = strdup(path)) == NULL)
			{
				snprintf(err, errsize, "out of memory");
				goto fail;
			}
			n->node_name = strdup(PQgetvalue(res, i, 1));
			n->node_port = strdup(PQgetvalue(res, i, 2));
			c->nnodes++;
			(*added)++;
		}
		else if (n->node_name && n->node_port && !n->said_moved &&
				 (strcmp(n->node_name, PQgetvalue(res, i, 1)) != 0 ||
				  strcmp(n->node_port, PQgetvalue(res, i, 2)) != 0))
		{
			/* citus_update_node, a failover: the slot is on the node followed */
			fprintf(stderr, "%s: warning: %s is now %s:%s in pg_dist_node; its stream follows "
					"the slot on %s:%s still\n"
					"hint: Once the old node's events are all written, stop this run, remove "
					"\"%s\" (after keeping its files) and start again: the group is followed "
					"from a new slot on its new node, with a first copy.\n",
					progname, n->label, PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
					n->node_name, n->node_port, n->dir);
			n->said_moved = 1;
		}
		n->in_metadata = 1;
	}
	/* the coordinator, when it is not a node of its own metadata */
	if (find_group(c, 0) == NULL && c->nnodes < MAX_NODES)
	{
		NodeStream *n = &c->nodes[c->nnodes];
		char		path[4200];

		memset(n, 0, sizeof(*n));
		n->fd = -1;
		n->in_metadata = 1;
		node_conn(c, n, "", "", err, errsize);
		snprintf(path, sizeof(path), "%s/group-0", c->dir);
		if ((n->dir = strdup(path)) == NULL)
		{
			snprintf(err, errsize, "out of memory");
			goto fail;
		}
		c->nnodes++;
		(*added)++;
	}
	ok = 1;
fail:
	/* a list read in part says nothing of the nodes it did not reach */
	if (!ok)
	{
		for (int i = 0; i < known; i++)
			c->nodes[i].in_metadata = was_listed[i];
		for (int i = known; i < c->nnodes; i++)
		{
			free(c->nodes[i].host);
			free(c->nodes[i].port);
			free(c->nodes[i].dir);
			free(c->nodes[i].node_name);
			free(c->nodes[i].node_port);
		}
		c->nnodes = known;
		*added = 0;
	}
	PQclear(res);
	PQfinish(conn);
	return ok ? 0 : -1;
}

/* Write the complete lines of a child's output, each led by its node */
static void
relay_lines(NodeStream *n, int flush)
{
	size_t		start = 0;

	for (size_t i = 0; i < n->len; i++)
		if (n->buf[i] == '\n')
		{
			fprintf(stderr, "[%s] %.*s\n", n->label, (int) (i - start), n->buf + start);
			start = i + 1;
		}
	/* a line longer than the buffer is written in pieces */
	if (start == 0 && (n->len == sizeof(n->buf) || flush) && n->len > 0)
	{
		fprintf(stderr, "[%s] %.*s\n", n->label, (int) n->len, n->buf);
		start = n->len;
	}
	memmove(n->buf, n->buf + start, n->len - start);
	n->len -= start;
}

static void
read_child(NodeStream *n)
{
	ssize_t		got = read(n->fd, n->buf + n->len, sizeof(n->buf) - n->len);

	if (got > 0)
	{
		n->len += (size_t) got;
		relay_lines(n, 0);
	}
	else if (got == 0 || (errno != EINTR && errno != EAGAIN))
	{
		relay_lines(n, 1);
		close(n->fd);
		n->fd = -1;
	}
}

static int
start_node(Cluster *c, NodeStream *n, int create_slot, int initial_copy,
		   CitusNodeStream run, char *err, size_t errsize)
{
	int			pipefd[2];
	pid_t		parent = getpid();
	pid_t		pid;
	sigset_t	block;
	sigset_t	old;

	if (pipe(pipefd) != 0)
	{
		snprintf(err, errsize, "could not create a pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	/* a signal is the parent's until the child has forgotten the parent's flag */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid < 0)
	{
		sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(err, errsize, "could not start the stream of %s: %s", n->label, strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0)
	{
		/*
		 * A process group of its own: a Ctrl-C at the terminal reaches the
		 * parent alone, which passes it on once (a second signal would stop
		 * the child at once).  It dies with the parent, even by kill -9.
		 */
		setpgid(0, 0);
		interrupted = 0;
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(1);
		for (int i = 0; i < c->nnodes; i++)
			if (c->nodes[i].fd >= 0)
				close(c->nodes[i].fd);
		if (c->applier.fd >= 0)
			close(c->applier.fd);
		close(pipefd[0]);
		if (dup2(pipefd[1], STDERR_FILENO) < 0)
			_exit(1);
		close(pipefd[1]);
		if (n == &c->applier)
		{
			CitusStreamNode	nodes[MAX_NODES];

			for (int i = 0; i < c->nnodes; i++)
			{
				nodes[i].group = c->nodes[i].group;
				nodes[i].conn = &c->nodes[i].conn;
				nodes[i].label = c->nodes[i].label;
			}
			exit(c->apply(nodes, c->nnodes, c->dir));
		}
		exit(run(&n->conn, n->dir, create_slot, initial_copy));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pipefd[1]);
	n->fd = pipefd[0];
	n->pid = pid;
	n->len = 0;
	return 0;
}

/* How the first start of a node goes: a directory of its own is resumed, a new one created */
static int
node_is_new(const NodeStream *n)
{
	struct stat sb;

	return stat(n->dir, &sb) != 0;
}

static void
signal_nodes(Cluster *c, int sig)
{
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].pid > 0 && !c->nodes[i].ended)
			kill(c->nodes[i].pid, sig);
	if (c->applier.pid > 0 && !c->applier.ended)
		kill(c->applier.pid, sig);
}

int
marker_exists(const char *dir, const char *name)
{
	char		p[4300];
	struct stat sb;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &sb) == 0;
}

void
marker_remove(const char *dir, const char *name)
{
	char		p[4300];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	(void) unlink(p);
}

int
marker_write(const char *dir, const char *name, char *err, size_t errsize)
{
	char		p[4300];
	int			fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || close(fd) != 0)
	{
		snprintf(err, errsize, "could not create \"%s\": %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

static const char *
describe_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "status %d", status);
	return buf;
}

int
citus_stream_run(const ConnOpts *coord, char *const *worker_hosts, int nworker_hosts,
				 const char *dir, int create_slot, int initial_copy, CitusNodeStream run,
				 CitusApply apply)
{
	static Cluster c;
	char		err[4096];
	int			added;
	double		last_read;
	int			stopping = 0;
	int			failed = 0;
	int			first = 1;

	c.coord = coord;
	c.maps = worker_hosts;
	c.nmaps = nworker_hosts;
	c.dir = dir;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		die("could not create directory \"%s\": %s", dir, strerror(errno));
	if (read_nodes(&c, &added, err, sizeof(err)) != 0)
		die("%s", err);
	last_read = now();
	c.apply = apply;
	c.applier.fd = -1;
	if (create_slot && find_group(&c, 0) != NULL)
		marker_remove(find_group(&c, 0)->dir, CITUS_SLOT_MADE);
	if (apply)
	{
		/* this run's markers only: the applier's, then each node's once it streams */
		marker_remove(dir, CITUS_TO_READY);
		for (int i = 0; i < c.nnodes; i++)
			marker_remove(c.nodes[i].dir, CITUS_NODE_READY);
		snprintf(c.applier.label, sizeof(c.applier.label), "MongoDB");
		c.applier.group = -1;
		c.applier_nodes = c.nnodes;
		if (start_node(&c, &c.applier, 0, 0, run, err, sizeof(err)) != 0)
			die("%s", err);
	}

	for (;;)
	{
		struct pollfd fds[MAX_NODES + 1];
		NodeStream *polled[MAX_NODES + 1];
		int			nfds = 0;
		int			running = 0;
		pid_t		pid;
		int			status;

		if (interrupted && !stopping)
		{
			stopping = 1;
			signal_nodes(&c, interrupted == SIGINT ? SIGINT : SIGTERM);
		}
		/* nodes not started yet: at the start, and those that joined since */
		for (int i = 0; i < c.nnodes && !stopping; i++)
		{
			NodeStream *n = &c.nodes[i];
			int			fresh;

			if (n->pid != 0 || n->ended)
				continue;
			/* --to: no slot before MongoDB answers and the clocks agree */
			if (apply && !marker_exists(dir, CITUS_TO_READY))
				break;
			/* a node new to DIR on a restart joined while nothing ran: the same */
			if (apply && (!first || i >= c.applier_nodes || (!create_slot && node_is_new(n))))
			{
				fprintf(stderr, "%s: error: %s joined the cluster while --to applies the nodes' "
						"streams: its first copy and its events cannot be placed in the commit "
						"order of the others yet\n"
						"hint: Stop shard moves to it, and start over: drop every node's slot, "
						"the target's collections and its progress document, remove \"%s\", and "
						"run with --create-slot --initial-copy.\n", progname, n->label, dir);
				n->ended = 1;
				failed = stopping = 1;
				signal_nodes(&c, SIGTERM);
				break;
			}
			fresh = node_is_new(n);
			if (!first)
				fprintf(stderr, "%s: %s joined the cluster: following it from a new slot, "
						"with a first copy of the rows it holds now\n", progname, n->label);
			else if (fresh && !create_slot)
				fprintf(stderr, "%s: %s has no stream in \"%s\" yet: following it from a new "
						"slot, with a first copy of the rows it holds now\n",
						progname, n->label, n->dir);
			if (start_node(&c, n,
						   first && create_slot ? 1 : fresh,
						   first && create_slot ? initial_copy : fresh,
						   run, err, sizeof(err)) != 0)
			{
				fprintf(stderr, "%s: error: %s\n", progname, err);
				failed = stopping = 1;
				signal_nodes(&c, SIGTERM);
			}
		}
		if (!apply || marker_exists(dir, CITUS_TO_READY) || stopping)
			first = 0;

		if (c.applier.fd >= 0)
		{
			fds[nfds].fd = c.applier.fd;
			fds[nfds].events = POLLIN;
			polled[nfds++] = &c.applier;
		}
		if (c.applier.pid > 0 && !c.applier.ended)
			running++;
		for (int i = 0; i < c.nnodes; i++)
		{
			NodeStream *n = &c.nodes[i];

			if (n->fd >= 0)
			{
				fds[nfds].fd = n->fd;
				fds[nfds].events = POLLIN;
				polled[nfds++] = n;
			}
			if (n->pid > 0 && !n->ended)
				running++;
		}
		if (running == 0 && nfds == 0)
			break;
		if (poll(fds, (nfds_t) nfds, 500) > 0)
			for (int i = 0; i < nfds; i++)
				if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
					read_child(polled[i]);

		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			for (int i = -1; i < c.nnodes; i++)
			{
				NodeStream *n = i < 0 ? &c.applier : &c.nodes[i];
				char		how[64];

				if (n->pid != pid)
					continue;
				while (n->fd >= 0)
					read_child(n);
				n->ended = 1;
				n->status = status;
				if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
					failed = 1;
				if (!stopping)
				{
					/* one node's stream is over: the run is, so that nothing lags unseen */
					fprintf(stderr, "%s: the stream of %s ended (%s): stopping the other nodes' "
							"streams cleanly\n", progname, n->label,
							describe_status(status, how, sizeof(how)));
					stopping = 1;
					signal_nodes(&c, SIGTERM);
				}
			}

		if (!stopping && !interrupted && now() - last_read >= NODE_POLL_SECONDS)
		{
			int			before = c.nnodes;

			last_read = now();
			if (read_nodes(&c, &added, err, sizeof(err)) != 0)
				fprintf(stderr, "%s: warning: could not read the cluster's nodes again (the "
						"next try is in %.0f s): %s\n", progname, NODE_POLL_SECONDS, err);
			for (int i = 0; i < before; i++)
				if (apply && !c.nodes[i].in_metadata && !c.nodes[i].ended)
				{
					fprintf(stderr, "%s: error: %s is no longer a primary node of the cluster "
							"while --to applies the nodes' streams: the merge would wait for its "
							"stream without end\n"
							"hint: Remove a node only after its shards are moved away "
							"(citus_drain_node) and this run has applied its events; then start "
							"over as for a node that joins: drop every node's slot, the target's "
							"collections and its progress document, remove \"%s\", and run with "
							"--create-slot --initial-copy.\n", progname, c.nodes[i].label, dir);
					failed = stopping = 1;
					signal_nodes(&c, SIGTERM);
					break;
				}
				else if (!c.nodes[i].in_metadata && !c.nodes[i].said_gone && !c.nodes[i].ended)
				{
					fprintf(stderr, "%s: %s is no longer a primary node of the cluster; its "
							"stream runs on until this run ends\n", progname, c.nodes[i].label);
					c.nodes[i].said_gone = 1;
				}
		}
	}

	fprintf(stderr, "%s: %d node streams in \"%s\", %s\n", progname, c.nnodes, dir,
			failed ? "not every one stopped cleanly" : "each stopped cleanly and confirmed");
	return failed ? 1 : 0;
}
