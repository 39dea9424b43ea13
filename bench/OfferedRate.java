import java.util.Properties;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Records offered at a steady rate by the Java client (bench/offered_rate.py --client java).
 *
 * Arguments: bootstrap topic rate seconds size. Each record is sent at its time (start + n / rate),
 * the thread parking in between rather than spinning, so that the client takes little of a small
 * machine's cores; one behind its schedule sends at once. Printed: the records delivered per second
 * over the run until the last acknowledgement, then each delivery latency (send() to the callback)
 * in microseconds, one per line; failed records are counted on stderr.
 */
public final class OfferedRate {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int rate = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        byte[] payload = new byte[Integer.parseInt(args[4])];
        Properties settings = new Properties();
        settings.put("bootstrap.servers", bootstrap);
        settings.put("acks", "all");
        settings.put("linger.ms", "0");
        int total = (int) (rate * seconds);
        long[] latencies = new long[total];
        int[] delivered = {0};
        int[] failed = {0};
        double elapsed;
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(settings, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.partitionsFor(topic);  // metadata first: its wait is not a record's latency
            long started = System.nanoTime();
            for (int n = 0; n < total; n++) {
                long due = started + (long) (n * 1e9 / rate);
                long pause = due - System.nanoTime();
                if (pause > 0) {
                    LockSupport.parkNanos(pause);
                }
                long sent = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, payload), (metadata, error) -> {
                    long latency = System.nanoTime() - sent;
                    synchronized (latencies) {
                        if (error == null) {
                            latencies[delivered[0]++] = latency;
                        } else {
                            failed[0]++;
                        }
                    }
                });
            }
            producer.flush();
            elapsed = (System.nanoTime() - started) / 1e9;
        }
        StringBuilder out = new StringBuilder();
        synchronized (latencies) {
            out.append(delivered[0] / elapsed).append('\n');
            for (int i = 0; i < delivered[0]; i++) {
                out.append(latencies[i] / 1000).append('\n');
            }
            if (failed[0] > 0) {
                System.err.println(failed[0] + " records failed");
            }
        }
        System.out.print(out);
    }
}
