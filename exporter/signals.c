/*
 * signals.c
 *		Interruption handling (see signals.h for the design).
 */
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Fixed-size registries: the handler must not take locks or follow pointers
 * that may be half-written, so a slot's contents are set before its 'used'
 * flag, and cleared after it.  The mutex only serializes threads that
 * register and unregister; the handler never takes it.
 */
#define MAX_FILES	160
#define MAX_CANCELS	80

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

volatile sig_atomic_t interrupted = 0;

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
		 * that does not answer the cancel request, say).  The temporary
		 * files went with the first; die now.
		 */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	interrupted = sig;
	for (i = 0; i < MAX_FILES; i++)
		if (files[i].used)
			(void) unlink(files[i].path);
	for (i = 0; i < MAX_CANCELS; i++)
		if (cancels[i].used)
			(void) PQcancel(cancels[i].cancel, errbuf, sizeof(errbuf));
	errno = saved_errno;
}

void
signals_install(void)
{
	struct sigaction sa;
	size_t		i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: a blocking call should return EINTR and see the flag */
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&sa.sa_mask, handled[i]);
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
