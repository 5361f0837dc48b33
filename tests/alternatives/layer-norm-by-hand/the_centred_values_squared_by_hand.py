def layer_norm(x, weight, bias, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    var = (centred**2).mean(-1, keepdim=True)
    return weight * centred / (var + eps) ** 0.5 + bias
