package kaas.interop;

/**
 * kaas.interop.CreateTopic BOOTSTRAP TOPIC [PARTITIONS=3] [REPLICATION_FACTOR=1]
 *
 * Creates a topic through AdminClient (TopicExistsException is tolerated), waits until
 * DescribeTopics shows it, prints {"topic":...,"created":true|false,"partitions":N}.
 */
public final class CreateTopic {
    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: CreateTopic BOOTSTRAP TOPIC [PARTITIONS] [REPLICATION_FACTOR]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        short rf = args.length > 3 ? Short.parseShort(args[3]) : 1;
        try {
            boolean created = Common.ensureTopic(bootstrap, topic, partitions, rf);
            System.out.println("{\"topic\":" + Common.q(topic) + ",\"created\":" + created
                    + ",\"partitions\":" + partitions + "}");
            System.exit(0);
        } catch (Throwable t) {
            System.err.println("CreateTopic FAILED: " + Common.describe(t));
            System.exit(1);
        }
    }
}
