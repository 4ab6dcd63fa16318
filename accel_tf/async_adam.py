"""Multi-step asynchronous Adam (Stooke & Abbeel 2018, Appendix B), in numpy on the central
parameter store (common/units/parameter_store.py): a learner takes several local Adam steps and then
applies them to the central parameters and moments at once.

Local step (ordinary Adam, all values zero-initialized but the parameters):
    t <- t + 1;  a <- r sqrt(1 - beta2^t) / (1 - beta1^t)
    m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
    s <- a m / (sqrt(v) + epsilon);  theta <- theta - s
    and the local accumulators: ag <- beta1 ag + g;  ag2 <- beta2 ag2 + g^2;  as <- as + s
Synchronization after n local steps (central values with a tilde):
    theta, theta~ <- theta~ - as
    m, m~ <- beta1^n m~ + (1 - beta1) ag;  v, v~ <- beta2^n v~ + (1 - beta2) ag2
    ag, ag2, as <- 0
The paper writes s = a m / sqrt(v) and lists epsilon among Adam's constants; it is added to
sqrt(v) here, as in Kingma & Ba.
"""
import numpy as np

SLOTS = ('first_moment', 'second_moment')


class AsyncAdam:
    """One learner's side of the rule; store: a ParameterStore with SLOTS. The step count t of
    the bias correction counts the gradient steps the central moments have taken in (the store's
    update count x local_steps_per_sync, as every learner synchronizes every that many steps) plus
    this learner's local steps since: the usual Adam's t with one learner, and a resumed run
    (whose store count and moments are restored) goes on with its correction near 1 rather than
    restarting it at t = 1, which would shrink its first thousand steps by up to 3x."""

    def __init__(self, store, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 local_steps_per_sync=1):
        self.store = store
        self.learning_rate = learning_rate
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.local_steps_per_sync = local_steps_per_sync
        size = store.handle.size
        self.parameters = store.pull()
        self.first_moment = np.array(store.slots['first_moment'])
        self.second_moment = np.array(store.slots['second_moment'])
        self.steps = store.updates * local_steps_per_sync
        self.local_steps = 0
        self.gradient_sum = np.zeros(size, np.float64)          # ag
        self.square_sum = np.zeros(size, np.float64)            # ag2
        self.step_sum = np.zeros(size, np.float64)              # as

    def local_step(self, gradient):
        """One local Adam step on the learner's own copy; returns the new local parameters."""
        beta1, beta2 = self.beta1, self.beta2
        gradient = np.asarray(gradient, np.float64)
        self.steps += 1
        self.local_steps += 1
        rate = (self.learning_rate * np.sqrt(1 - beta2 ** self.steps)
                / (1 - beta1 ** self.steps))
        self.first_moment = beta1 * self.first_moment + (1 - beta1) * gradient
        self.second_moment = beta2 * self.second_moment + (1 - beta2) * gradient ** 2
        step = rate * self.first_moment / (np.sqrt(self.second_moment) + self.epsilon)
        self.parameters = (self.parameters - step).astype(np.float32)
        self.gradient_sum = beta1 * self.gradient_sum + gradient
        self.square_sum = beta2 * self.square_sum + gradient ** 2
        self.step_sum += step
        return self.parameters

    def synchronize(self):
        """Applies the local steps since the last synchronization to the central store (chunk
        by chunk, under its locks) and takes the central values back; returns the update count."""
        local_steps = self.local_steps
        beta1, beta2 = self.beta1, self.beta2

        def update(chunk, parameters, slots):
            parameters -= self.step_sum[chunk].astype(np.float32)
            first, second = slots['first_moment'], slots['second_moment']
            first[:] = beta1 ** local_steps * first + (1 - beta1) * self.gradient_sum[chunk]
            second[:] = beta2 ** local_steps * second + (1 - beta2) * self.square_sum[chunk]
            self.parameters[chunk] = parameters
            self.first_moment[chunk] = first
            self.second_moment[chunk] = second

        count = self.store.apply(update)
        self.steps = count * self.local_steps_per_sync  # the moments just taken are the store's
        self.gradient_sum[:] = 0.0
        self.square_sum[:] = 0.0
        self.step_sum[:] = 0.0
        self.local_steps = 0
        return count
