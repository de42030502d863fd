/*
 * signals.c
 *		Interruption handling (see signals.h for the design).
 */
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Fixed-size registries: the handler must not take locks or follow pointers
 * that may be half-written, so a slot's contents are set before its 'used'
 * flag, and cleared after it.  'used' is volatile, but the contents are not,
 * and the compiler may move a plain store across a volatile one: a signal
 * fence (a compiler barrier; the handler runs in the registering thread, see
 * signals.h) keeps the order, on both sides.  The mutex only serializes
 * threads that register and unregister; the handler never takes it.
 */
#define MAX_FILES	4096
#define MAX_CANCELS	512

typedef struct FileSlot
{
	volatile sig_atomic_t used;
	char	   *path;
} FileSlot;

typedef struct CancelSlot
{
	volatile sig_atomic_t used;
	PGcancel   *cancel;
} CancelSlot;

atomic_int	interrupted = 0;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs a lock-free atomic_int");

static FileSlot files[MAX_FILES];
static CancelSlot cancels[MAX_CANCELS];
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static const int handled[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* Block the handled signals in this thread, saving the previous mask. */
static void
block_save(sigset_t *old)
{
	sigset_t	set;
	size_t		i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&set, handled[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

/* unlink every registered temporary file (async-signal-safe) */
static void
unlink_registered(void)
{
	int			i;

	for (i = 0; i < MAX_FILES; i++)
		if (files[i].used)
		{
			atomic_signal_fence(memory_order_acquire);
			(void) unlink(files[i].path);
		}
}

static void
handler(int sig)
{
	int			saved_errno = errno;
	int			i;
	char		errbuf[256];

	if (interrupted != 0)
	{
		/*
		 * A second signal: the first one's cleanup is stuck (a connection
		 * that does not answer the cancel request, say, with the first
		 * handler itself blocked in PQcancel: the handled signals are not
		 * blocked while it runs, see signals_install).  Remove the temporary
		 * files again (one may have been created since the first signal),
		 * then die now.
		 */
		unlink_registered();
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	interrupted = sig;
	unlink_registered();
	for (i = 0; i < MAX_CANCELS; i++)
		if (cancels[i].used)
		{
			atomic_signal_fence(memory_order_acquire);
			(void) PQcancel(cancels[i].cancel, errbuf, sizeof(errbuf));
		}
	errno = saved_errno;
}

void
signals_install(void)
{
	struct sigaction sa;
	size_t		i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;

	/*
	 * Nothing blocked while the handler runs, not even the signal itself
	 * (SA_NODEFER): the handler's PQcancel connects to the server and can
	 * block for as long as the network does, and a second Ctrl-C must still
	 * get through then, to kill the process.  No SA_RESTART: a blocking call
	 * should return EINTR and see the flag.
	 */
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaction(handled[i], &sa, NULL);

	/*
	 * A closed pipe on standard output (pg_bsonexport -o - | head -c 100)
	 * must be a write error that we report and clean up after, not a silent
	 * death.
	 */
	signal(SIGPIPE, SIG_IGN);
}

int
signals_register_file(const char *path)
{
	int			i;
	char	   *copy = strdup(path);

	if (copy == NULL)
		return -1;
	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < MAX_FILES; i++)
		if (!files[i].used)
		{
			files[i].path = copy;
			atomic_signal_fence(memory_order_release);
			files[i].used = 1;
			pthread_mutex_unlock(&registry_lock);
			return i;
		}
	pthread_mutex_unlock(&registry_lock);
	free(copy);
	return -1;
}

void
signals_unregister_file(int slot)
{
	char	   *path;
	sigset_t	old;

	if (slot < 0 || slot >= MAX_FILES)
		return;
	/* the handler must not see the slot while it changes (see signals.h) */
	block_save(&old);
	pthread_mutex_lock(&registry_lock);
	path = files[slot].path;
	files[slot].used = 0;
	atomic_signal_fence(memory_order_release);
	files[slot].path = NULL;
	pthread_mutex_unlock(&registry_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(path);
}

int
signals_register_cancel(PGcancel *cancel)
{
	int			i;

	if (cancel == NULL)
		return -1;
	pthread_mutex_lock(&registry_lock);
	for (i = 0; i < MAX_CANCELS; i++)
		if (!cancels[i].used)
		{
			cancels[i].cancel = cancel;
			atomic_signal_fence(memory_order_release);
			cancels[i].used = 1;
			pthread_mutex_unlock(&registry_lock);
			return i;
		}
	pthread_mutex_unlock(&registry_lock);
	return -1;
}

void
signals_unregister_cancel(int slot)
{
	sigset_t	old;

	if (slot < 0 || slot >= MAX_CANCELS)
		return;
	block_save(&old);
	pthread_mutex_lock(&registry_lock);
	cancels[slot].used = 0;
	atomic_signal_fence(memory_order_release);
	cancels[slot].cancel = NULL;
	pthread_mutex_unlock(&registry_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void
set_mask(int how)
{
	sigset_t	set;
	size_t		i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&set, handled[i]);
	pthread_sigmask(how, &set, NULL);
}

void
signals_block(void)
{
	set_mask(SIG_BLOCK);
}

void
signals_unblock(void)
{
	set_mask(SIG_UNBLOCK);
}

void
signals_reraise(void)
{
	int			sig = interrupted;
	struct sigaction sa;

	if (sig == 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	signals_unblock();
	raise(sig);
	/* SIGQUIT's default may dump core, but raise() does not return either way */
	_exit(128 + sig);
}
