/* The admin worker: one thread and a job queue for the admin routes whose nats.c calls
 * block (JetStream requests, synchronous publishes). Such calls deadlock or stall when
 * made on the h2o event-loop thread (docs/ARCHITECTURE.md, "Threads"), so the loop only
 * parses the request, queues a job here and goes on; the worker runs it and sends the
 * answer back through the loop's multithread queue. One thread is enough: these are rare operator
 * requests, and running them one at a time keeps a replay and a purge from racing. */
#include <stdlib.h>
#include <string.h>

#include "../common/json_out.h"
#include "../common/log.h"
#include "internal.h"

#define MAX_QUEUED 64

/* The request's pool is being freed: the client is gone or the response was sent. */
static void on_req_dispose(void *p)
{
    struct gust_admin_job **anchor = p;
    if (*anchor != NULL) {
        (*anchor)->req = NULL;
        (*anchor)->anchor = NULL;
    }
}

static void *worker_main(void *arg)
{
    struct gust_http *http = arg;
    struct gust_admin_worker *w = &http->worker;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->head == NULL && !w->stopping) {
            pthread_cond_wait(&w->wake, &w->lock);
        }
        if (w->stopping) {
            break;
        }
        struct gust_admin_job *job = w->head;
        w->head = job->next;
        if (w->head == NULL) {
            w->tail = NULL;
        }
        w->queued--;
        pthread_mutex_unlock(&w->lock);
        job->run(job);
        h2o_multithread_send_message(&http->admin_done, &job->msg);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int gust_admin_start(struct gust_http *http, struct gust_err *err)
{
    struct gust_admin_worker *w = &http->worker;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, worker_main, http) != 0) {
        return gust_err_set(err, GUST_EIO, "http: cannot start the admin worker thread");
    }
    w->started = 1;
    return 0;
}

/* A job that never ran: its answer is status with why, by done or sent. */
static void refused(h2o_req_t *req, enum gust_route route, void (*done)(struct gust_admin_job *), void *done_ud,
                    int status, const char *why)
{
    if (done == NULL) {
        gust_http_send_error(req, route, status, why);
        return;
    }
    struct gust_admin_job job = {.req = req, .route = route, .done_ud = done_ud};
    gust_admin_fail(&job, status, why);
    done(&job);
    gust_buf_free(&job.body);
}

static void submit(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                   void (*run)(struct gust_admin_job *), const struct gust_dlq_query *q, void *arg,
                   void (*free_arg)(void *), void (*done)(struct gust_admin_job *), void *done_ud)
{
    struct gust_admin_worker *w = &http->worker;
    struct gust_admin_job *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        if (free_arg != NULL) {
            free_arg(arg);
        }
        refused(req, route, done, done_ud, 503, "out of memory");
        return;
    }
    job->done = done;
    job->done_ud = done_ud;
    job->http = http;
    job->req = req;
    job->route = route;
    job->run = run;
    job->q = *q;
    job->arg = arg;
    job->free_arg = free_arg;
    pthread_mutex_lock(&w->lock);
    int full = w->queued >= MAX_QUEUED || w->stopping || !w->started;
    if (!full) {
        if (w->tail != NULL) {
            w->tail->next = job;
        } else {
            w->head = job;
        }
        w->tail = job;
        w->queued++;
        /* Linked before the worker can finish it: the completion runs on this thread. */
        job->anchor = h2o_mem_alloc_shared(&req->pool, sizeof(*job->anchor), on_req_dispose);
        *job->anchor = job;
        http->admin_inflight++;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->lock);
    if (full) {
        if (free_arg != NULL) {
            free_arg(arg);
        }
        free(job);
        refused(req, route, done, done_ud, 503, "admin worker busy or stopping; try again");
    }
}

void gust_admin_submit(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                       void (*run)(struct gust_admin_job *), const struct gust_dlq_query *q)
{
    submit(http, req, route, run, q, NULL, NULL, NULL, NULL);
}

void gust_admin_submit_arg(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                           void (*run)(struct gust_admin_job *), void *arg, void (*free_arg)(void *))
{
    struct gust_dlq_query none = {0};
    submit(http, req, route, run, &none, arg, free_arg, NULL, NULL);
}

void gust_admin_submit_done(struct gust_http *http, h2o_req_t *req, enum gust_route route,
                            void (*run)(struct gust_admin_job *), const struct gust_dlq_query *q, void *arg,
                            void (*free_arg)(void *), void (*done)(struct gust_admin_job *), void *done_ud)
{
    struct gust_dlq_query none = {0};
    submit(http, req, route, run, q != NULL ? q : &none, arg, free_arg, done, done_ud);
}

void gust_admin_fail(struct gust_admin_job *job, int status, const char *why)
{
    job->status = status;
    job->body.len = 0;
    gust_buf_append(&job->body, "{\"error\":", 9);
    gust_json_append_string(&job->body, why, strlen(why));
    gust_buf_append(&job->body, "}\n", 2);
}

/* Event loop: jobs finished (or abandoned at shutdown). */
void gust_admin_on_done(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    (void)receiver;
    while (!h2o_linklist_is_empty(messages)) {
        struct gust_admin_job *job = (struct gust_admin_job *)messages->next; /* msg is first */
        h2o_linklist_unlink(&job->msg.link);
        job->http->admin_inflight--;
        if (job->req != NULL) {
            *job->anchor = NULL;
            if (job->done != NULL) {
                job->done(job);
            } else if (job->body.len == 0) {
                gust_http_send_error(job->req, job->route, job->status != 0 ? job->status : 500, "no answer");
            } else {
                gust_http_send(job->req, job->route, job->status, "application/json", job->body.data, job->body.len);
            }
        }
        gust_buf_free(&job->body);
        if (job->free_arg != NULL) {
            job->free_arg(job->arg);
        }
        free(job);
    }
}

void gust_admin_stop(struct gust_http *http)
{
    struct gust_admin_worker *w = &http->worker;
    if (!w->started) {
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->started = 0;
    /* What never ran is answered by the loop like any finished job. */
    while (w->head != NULL) {
        struct gust_admin_job *job = w->head;
        w->head = job->next;
        job->status = 503;
        gust_buf_printf(&job->body, "{\"error\":\"shutting down\"}\n");
        h2o_multithread_send_message(&http->admin_done, &job->msg);
    }
    w->tail = NULL;
    w->queued = 0;
}
