"""GA3C (Babaeizadeh et al. 2017): agents, predictors, trainers, queues and dynamic tuning."""
