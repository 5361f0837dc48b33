def softmax(x):
    out = x - x.max(dim=-1, keepdim=True).values
    out.exp_()
    out /= out.sum(dim=-1, keepdim=True)
    return out
