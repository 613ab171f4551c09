// A JVM program with one hot method: work() calls spin() in a loop for SECONDS seconds.
// Usage: java -XX:+PreserveFramePointer -cp DIR Hot SECONDS
public class Hot {
    static long sink;

    static long spin(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) {
            x += i * 31 ^ (x >>> 3);
        }
        return x;
    }

    static void work() {
        sink += spin(2_000_000);
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
        while (System.nanoTime() < end) {
            work();
        }
        System.out.println(sink);
    }
}
