package bank;

/** A bank account with a balance. */
public class Account {
    private long balance;

    public Account(long opening) {
        balance = opening;
    }

    /** Takes money out; refuses to go below zero. */
    public boolean withdraw(long amount) {
        if (amount > balance) {
            return false;
        }
        balance -= amount;
        return true;
    }
}
