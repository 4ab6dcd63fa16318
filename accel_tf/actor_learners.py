"""A3C's and APPO's actor-learners (Stooke & Abbeel 2018, sections 4.2 and 5.1; Mnih et al.
2016's word): what one learner process of an asynchronous run iterates
(common/units/async_learners.py), sampling with its own simulators and updating the central
parameter store.

A3C: a 16-environment A2C actor-learner; after each rollout it computes its clipped gradient
locally, then, chunk by chunk under the chunk's lock, applies RMSProp with the central mean squares
to the central parameters and takes the result as its own ("after this sequence, the local
parameters are in sync with the central values").
APPO: an 8-environment PPO actor-learner; it pulls fresh central parameters every
pull_every_steps sampling steps, records each action's log-probability as it samples, then takes
the PPO update sequence as local Adam steps, synchronizing with the store every
local_steps_per_sync of them (Appendix B).

Each class says the store's optimizer (OPTIMIZER), the statistics it reports (STATS) and its
central statistics' initial values (slot_initial_values); iterate() runs one rollout and its
updates and returns (environment steps, episodes ended, statistics).
"""
import numpy as np

from accel_tf import async_adam
from accel_tf import ppo
from common.units import async_learners
from common.units import parameter_store

# The statistics each actor-learner reports per round, logged as interval means.
A3C_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate',
             'policy_lag')
APPO_STATS = A3C_STATS + ('clip_fraction', 'approx_kl')


class A3CActorLearner:
    """One A2C actor-learner updating the store with RMSProp's central statistics."""
    OPTIMIZER = 'rmsprop'
    STATS = A3C_STATS

    @staticmethod
    def slot_initial_values(config):
        return {'mean_square': config.rmsprop_initial_mean_square}

    def __init__(self, config, learner, sampler, store, seed):
        del seed  # the learner's generator, seeded per actor-learner, is all A3C draws from
        self.config = config
        self.learner = learner
        self.sampler = sampler
        self.store = store
        self.variables = learner.model.trainable_variables
        self.local = store.pull()
        async_learners.assign_flat(self.variables, self.local)
        self.synced_at = store.updates

    def _policy(self, observations):
        return self.learner.act(observations).numpy()

    def iterate(self):
        episodes = self.sampler.collect(self._policy)
        rollout = self.sampler.rollout
        gradient, stats = self.learner.flat_rollout_gradients(
            rollout.observations, rollout.actions, rollout.rewards, rollout.terminals)
        gradient = gradient.numpy()
        config, local = self.config, self.local
        rate = config.scaled_learning_rate

        def update(chunk, parameters, slots):
            parameter_store.rmsprop_step(
                parameters, slots['mean_square'], gradient[chunk], rate, config.rmsprop_decay,
                config.rmsprop_epsilon, config.rmsprop_epsilon_inside_sqrt)
            local[chunk] = parameters

        count = self.store.apply(update)
        lag = count - 1 - self.synced_at  # others' updates since this actor-learner's parameters
        self.synced_at = count
        async_learners.assign_flat(self.variables, local)
        stats = {name: float(value) for name, value in stats.items()}
        stats.update(updates=1, policy_lag=lag, learning_rate=rate)
        return rollout.actions.size, episodes, stats


class APPOActorLearner:
    """One PPO actor-learner taking local Adam steps, synchronized with the store every
    local_steps_per_sync of them by Appendix B's rule."""
    OPTIMIZER = 'adam'
    STATS = APPO_STATS

    @staticmethod
    def slot_initial_values(config):
        del config
        return {slot: 0.0 for slot in async_adam.SLOTS}

    def __init__(self, config, learner, sampler, store, seed):
        self.config = config
        self.learner = learner
        self.sampler = sampler
        self.store = store
        self.generator = np.random.default_rng(seed)  # minibatch shuffles
        self.adam = async_adam.AsyncAdam(store, config.scaled_learning_rate,
                                         beta1=config.adam_beta1, beta2=config.adam_beta2,
                                         epsilon=config.adam_epsilon,
                                         local_steps_per_sync=config.appo.local_steps_per_sync)
        self.synced_at = store.updates
        self.sampled_log_probs = np.zeros(sampler.rollout.actions.shape, np.float32)
        self._pull()

    def _pull(self):
        self.adam.parameters = self.store.pull()
        self.synced_at = self.store.updates
        self.learner.assign_parameters(self.adam.parameters)

    def iterate(self):
        config, ppo_config = self.config, self.config.ppo
        pull_every_steps = config.appo.pull_every_steps
        local_steps_per_sync = config.appo.local_steps_per_sync
        step = 0

        def policy(observations):
            nonlocal step
            if step and step % pull_every_steps == 0:
                self._pull()
            actions, log_probs = self.learner.act_with_log_probs(observations)
            self.sampled_log_probs[step] = log_probs.numpy()
            step += 1
            return actions.numpy()

        episodes = self.sampler.collect(policy)
        rollout = self.sampler.rollout
        # The batch stays where it was computed (the device); each minibatch is gathered there
        # and only its gradient and statistics come back, in one copy.
        data = self.learner.sampled_rollout_targets(
            rollout.observations, rollout.actions, rollout.rewards, rollout.terminals,
            self.sampled_log_probs)
        batch = rollout.actions.size
        minibatch = batch // ppo_config.minibatches
        sums, lags, updates = dict.fromkeys(APPO_STATS, 0.0), [], 0
        summed = [(index, name) for index, name in enumerate(ppo.MINIBATCH_STATS)
                  if name in sums]
        for _ in range(ppo_config.epochs):
            order = self.generator.permutation(batch).astype(np.int32)
            for index in range(ppo_config.minibatches):
                picked = order[index * minibatch:(index + 1) * minibatch]
                flat = self.learner.flat_minibatch_gradients(*data, picked).numpy()
                gradient, stats = np.split(flat, [flat.size - len(ppo.MINIBATCH_STATS)])
                for position, name in summed:
                    sums[name] += float(stats[position])
                self.learner.assign_parameters(self.adam.local_step(gradient))
                if self.adam.local_steps == local_steps_per_sync:
                    count = self.adam.synchronize()
                    lags.append(count - 1 - self.synced_at)
                    self.synced_at = count
                    updates += 1
                    self.learner.assign_parameters(self.adam.parameters)
        steps = ppo_config.gradient_steps
        stats = {name: total / steps for name, total in sums.items()}
        stats.update(updates=updates, policy_lag=float(np.mean(lags)),
                     learning_rate=self.adam.learning_rate)
        return batch, episodes, stats

