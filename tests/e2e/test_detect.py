"""A detect unit on the consumer core: one durable consumer over every .from()
subject (stream order kept), the event type taken from the subject's binding, alerts
published to the .to() subject or ev.detect.<unit>.<stream>, undecodable events
dead-lettered."""
import json

from gustlib import Checks, Gust, NatsServer, TempDir, nats_publish, wait_for

PROGRAM = """
connector Bus = nats (url: "the host's bus")

event Order:
    id: int
    customer: str
    amount: float

event Payment:
    order_id: int
    amount: float

stream Orders = Order.from(Bus, topic: "ev.shop.orders")
stream Payments = Payment.from(Bus, topic: "ev.shop.payments")

stream OrderPaid = Orders as order
    -> Payments where order_id == order.id as payment
    .emit(order_id: order.id, customer: order.customer, paid: payment.amount)

stream BigOrder = Orders
    .where(amount > 1000.0)
    .emit(id: id, amount: amount)
    .to(Bus, topic: "ev.alerts.big")
"""

CONF = """
http { listen 127.0.0.1:@PORT@; }
nats { url %s; }
detect shop { rules shop.vpl; }
"""


def main():
    t = Checks()
    tmp = TempDir()
    tmp.file("shop.vpl", PROGRAM)
    nats = NatsServer(tmp)
    g = Gust(tmp, CONF % nats.url)
    try:
        # No event_type in the payloads: the subject's binding types them.
        nats_publish(nats.port, [
            ("ev.shop.orders", b'{"id": 1, "customer": "Alice", "amount": 150.0}'),
            ("ev.shop.orders", b'{"id": 2, "customer": "Bob", "amount": 2500.0}'),
            ("ev.shop.other", b'{"ignored": true}'),
            ("ev.shop.payments", b'{"order_id": 2, "amount": 2500.0}'),
            ("ev.shop.payments", b'{"order_id": 1, "amount": 150.0}'),
            ("ev.shop.orders", b'{"id": 3, "customer": "Carol", broken'),
        ])

        def alerts():
            return [(m[1], json.loads(m[2])) for m in nats.read_stream()
                    if m[1].startswith("ev.alerts") or m[1].startswith("ev.detect")]
        got = wait_for(lambda: len(alerts()) >= 3 and alerts(), 10, "three alerts")
        for _, a in got:
            a.pop("timestamp", None)
        t.eq(got, [
            ("ev.alerts.big", {"event_type": "BigOrder", "id": 2, "amount": 2500.0}),
            ("ev.detect.shop.OrderPaid", {"event_type": "OrderPaid", "order_id": 2, "customer": "Bob", "paid": 2500.0}),
            ("ev.detect.shop.OrderPaid", {"event_type": "OrderPaid", "order_id": 1, "customer": "Alice", "paid": 150.0}),
        ], "alerts, their subjects, in stream order")

        dead = wait_for(lambda: [json.loads(m[2]) for m in nats.read_stream("GUST_DLQ")], 10, "a dead letter")
        t.eq([(d["unit"], d["attempts"], d["original_subject"]) for d in dead], [("shop", 1, "ev.shop.orders")],
             "the undecodable event is dead-lettered at once")
        units = json.loads(g.request("GET", "/units")[1])["units"]
        t.eq([(u["name"], u["kind"], u["source"]) for u in units], [("shop", "detect", "ev.shop.>")],
             "one consumer over both subjects")
        d = units[0]["detect"]
        t.eq((d["slices"], d["owned"], d["events"], d["open_runs"]), (1, [0], 4, 0),
             "/units: one slice held here, 4 events applied (the broken one dead-lettered), no run open")
        t.check(d["position"] >= 6 and d["started"].startswith("slice 0 empty: no checkpoint yet"),
                "/units: the position, and how the slice was taken over: %r" % d)
        metrics = g.request("GET", "/metrics")[1].decode()
        for line in ('gust_detect_open_runs{unit="shop"} 0', 'gust_detect_slices_owned{unit="shop"} 1',
                     'gust_detect_dropped_total{unit="shop",what="runs"} 0',
                     'gust_detect_restores_total{unit="shop"} 1'):
            t.check(line in metrics, "/metrics has " + line)
        t.eq(g.stop(), 0, "clean stop")
    finally:
        if g.proc.poll() is None:
            g.proc.kill()
        nats.stop()
        if t.failed:
            print(g.log()[-3000:])
    tmp.cleanup()
    t.done()


if __name__ == "__main__":
    main()
