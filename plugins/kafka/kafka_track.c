/* kafka_in's offsets: what may be committed. A Kafka commit says "everything before this
 * offset is done", so a partition's commit may only move over a run of messages that are
 * all stored in JetStream: a PubAck that comes back early for offset 12 while 11 is still
 * in flight must not commit 13. Each partition keeps its messages in read order; the
 * stored ones at the head are popped and move commit_next. */
#include <stdlib.h>
#include <string.h>

#include "kafka.h"

struct kafka_part *kafka_track_part(struct kafka_track *t, const char *topic, int32_t partition)
{
    for (struct kafka_part *p = t->parts; p; p = p->next) {
        if (p->partition == partition && strcmp(p->topic, topic) == 0) {
            return p;
        }
    }
    struct kafka_part *p = calloc(1, sizeof(*p));
    if (!p || !(p->topic = strdup(topic))) {
        free(p);
        return NULL;
    }
    p->partition = partition;
    p->commit_next = -1;
    p->committed = -1;
    p->next = t->parts;
    t->parts = p;
    return p;
}

struct kafka_tracked *kafka_track_add(struct kafka_part *p, int64_t offset)
{
    struct kafka_tracked *e = calloc(1, sizeof(*e));
    if (!e) {
        return NULL;
    }
    e->offset = offset;
    atomic_store(&e->state, KAFKA_PENDING);
    if (p->tail) {
        p->tail->next = e;
    } else {
        p->head = e;
    }
    p->tail = e;
    return e;
}

int kafka_track_advance(struct kafka_part *p)
{
    while (p->head && atomic_load(&p->head->state) == KAFKA_STORED) {
        struct kafka_tracked *e = p->head;
        p->commit_next = e->offset + 1;
        p->head = e->next;
        if (!p->head) {
            p->tail = NULL;
        }
        free(e);
    }
    return p->head && atomic_load(&p->head->state) == KAFKA_FAILED;
}

rd_kafka_topic_partition_list_t *kafka_track_to_commit(struct kafka_track *t)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    for (struct kafka_part *p = t->parts; p; p = p->next) {
        if (p->commit_next < 0 || p->commit_next <= p->committed) {
            continue;
        }
        if (!l && !(l = rd_kafka_topic_partition_list_new(4))) {
            return NULL;
        }
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = p->commit_next;
        p->committed = p->commit_next;
    }
    return l;
}

void kafka_track_clear(struct kafka_part *p)
{
    while (p->head) {
        struct kafka_tracked *e = p->head;
        p->head = e->next;
        free(e);
    }
    p->tail = NULL;
}

void kafka_track_remove(struct kafka_track *t, struct kafka_part *p)
{
    for (struct kafka_part **pp = &t->parts; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    kafka_track_clear(p);
    free(p->topic);
    free(p);
}

void kafka_track_free(struct kafka_track *t)
{
    while (t->parts) {
        kafka_track_remove(t, t->parts);
    }
}
